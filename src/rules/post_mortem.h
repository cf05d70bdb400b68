#pragma once
// The post-mortem of one ended task: its class, the evidence, and the suspect nodes. Made
// once, when llmwatch first sees the task gone (Slurm forgets ended jobs after MinJobAge),
// and kept in the store, so that the restart, `llmwatch job` and the alert all read the same.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rules/attribution.h"
#include "rules/end_cause.h"

namespace llmwatch {

struct PostMortem {
  std::string task;  // "7"
  std::int64_t task_start = 0;
  std::int64_t task_end = 0;  // Slurm's end of the allocation (0: unknown), for the ledger
  std::string nodes;          // the task's node list as Slurm wrote it
  int node_count = 0;
  std::string partition;
  EndVerdict verdict;
  std::vector<Suspect> suspects;
  double made = 0;  // when llmwatch made it
  // The quick node-check after a crash that may be a node's did not fit the cycle's remote
  // budget: the end is unknown (nothing acts on it) until a later cycle has checked.
  bool node_check_pending = false;

  bool same_task(const std::string& id, std::int64_t start) const {
    return task == id && task_start == start;
  }
  std::string to_json() const;
  static std::optional<PostMortem> from_json(const std::string& text);
};

// Classifies the end, and attributes it to nodes only when its class may be a node's fault
// (an OOM or a Python error never blames a node).
PostMortem make_post_mortem(const std::string& task, std::int64_t task_start,
                            const std::string& nodes, int node_count, const std::string& partition,
                            const EndEvidence& evidence, const TaskLayout& layout,
                            const std::vector<NodeTrouble>& troubles, double now);

// The cause the goodput ledger charges the end to: its class, or for a GPU error the Xid a
// log line or the node-check named ("Xid 79"), so that a node's losses read by Xid.
std::string ledger_cause(const PostMortem& p);

}  // namespace llmwatch
