#pragma once
// Node health as findings. Pure: given the latest node-check verdict of each node llmwatch
// manages, the Slurm view of the nodes and what the store remembers, say what is wrong:
//   node:<n>/gpu   gpu-fault (CRITICAL), gpu-warn, gpu-unknown (stale or UNKNOWN), or
//                  repaired (a node llmwatch may undrain passes a check taken after the drain)
//   node:<n>/lemon many incidents in the lemon window
//   job:<j>/...    node-fault / node-degraded for a watched task on such a node
// What to do about them is policy (policy/node_policy.h).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/finding.h"
#include "rules/node_report.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"

namespace llmwatch {

// The cause of a gpu-fault or gpu-warn finding whose every item a GPU reset would heal (a
// reset-class Xid, a pending row remap): policy may reboot the node instead of draining it.
inline constexpr const char* kResetHeals = "reset";

struct WatchedTask {
  std::string label;  // the [[job]]
  SlurmJob task;      // its running task
};

struct NodeFacts {
  std::map<std::string, NodeReport> reports;  // the latest verdict of each managed node
  std::set<std::string> managed;              // the nodes llmwatch may act on
  std::vector<SlurmNode> nodes;               // sinfo
  std::map<std::string, double> drained_at;   // nodes llmwatch drained, and when
  std::map<std::string, int> incidents;       // per node, within the lemon window
  // Nodes llmwatch had rebooted that have booted since, and when: a report older than the
  // boot is not the node's verdict any more, and a reset-class fault after it needs a human.
  std::map<std::string, double> booted;
  std::vector<WatchedTask> running;
  std::set<std::string> watched;  // the nodes `running` runs on
  double now = 0;
};

struct NodeJudgement {
  std::vector<Finding> findings;
  std::vector<std::string> scopes;     // finding-key prefixes evaluated
  std::vector<std::string> bad_nodes;  // CRITICAL now: never restart a job onto these
  int unknown = 0;                     // nodes without a usable verdict
};

NodeJudgement judge_nodes(const GpuSettings& g, const NodeFacts& facts);

}  // namespace llmwatch
