#pragma once
// What can still be learned about a task that ended: Slurm's final state, reason and exit
// code (squeue while it still lists the job, else `scontrol show job`, both forget it after
// MinJobAge; then `sacct`, where the cluster keeps accounting), the task's layout (nodes, ranks per
// node) and, when its log names peers by address, each node's NodeAddr. Observes only;
// rules/post_mortem.h judges.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "slurm/slurm_client.h"
#include "slurm/slurm_job.h"

namespace llmwatch {

// What Slurm and the logs say of an ended task (rules/end_cause.h classifies it).
struct EndEvidence {
  std::string task;                   // "7", "3_1"
  std::string state;                  // Slurm's final state; "" when Slurm no longer knows the task
  std::string reason;                 // scontrol Reason
  std::string exit_code;              // "0:0", "1:0", "0:9"
  std::string source;                 // who told the state: squeue, scontrol or sacct
  std::int64_t end_time = 0;          // when the allocation ended (unix seconds; 0 unknown)
  std::vector<std::string> log_tail;  // the last lines the task printed, oldest first
  bool cancelled_by_llmwatch = false;
  bool reached_max_steps = false;
};

// Where the task ran, for attributing a crash to a node (rules/attribution.h).
struct TaskLayout {
  std::vector<std::string> nodes;                      // the task's nodes, in Slurm's order
  int ranks_per_node = 0;                              // 0: unknown (ranks cannot be mapped)
  std::map<std::string, std::string> address_to_node;  // NodeAddr (unique ones only)
};

struct EndObservation {
  EndEvidence evidence;  // log_tail, cancelled_by_llmwatch and reached_max_steps: the caller's
  TaskLayout layout;
};

// `final_entry`: the task as squeue still lists it (COMPLETED, FAILED, ...), if it does;
// `show`: its `scontrol show job` (empty when Slurm forgot it). `slurm` is asked for its
// accounting record when both have forgotten it, and for node addresses.
EndObservation observe_end(SlurmClient& slurm, const SlurmJob& task,
                           const std::optional<SlurmJob>& final_entry,
                           std::map<std::string, std::string> show,
                           std::vector<std::string> log_tail);

}  // namespace llmwatch
