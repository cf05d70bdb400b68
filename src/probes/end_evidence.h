#pragma once
// What can still be learned about a task that ended: Slurm's final state, reason and exit
// code (squeue while it still lists the job, else `scontrol show job`, both forget it after
// MinJobAge), the task's layout (nodes, ranks per node) and, when its log names peers by
// address, each node's NodeAddr. Observes only; rules/post_mortem.h judges.
#include <optional>
#include <string>
#include <vector>

#include "rules/attribution.h"
#include "rules/end_cause.h"
#include "slurm/slurm_client.h"
#include "slurm/slurm_job.h"

namespace llmwatch {

struct EndObservation {
  EndEvidence evidence;  // log_tail, cancelled_by_llmwatch and reached_max_steps: the caller's
  TaskLayout layout;
};

// `final_entry`: the task as squeue still lists it (COMPLETED, FAILED, ...), if it does.
EndObservation observe_end(SlurmClient& slurm, const SlurmJob& task,
                           const std::optional<SlurmJob>& final_entry,
                           std::vector<std::string> log_tail);

}  // namespace llmwatch
