#pragma once
// The nodes a task that starts again is kept off (#30: never land on a bad node again): the
// cycle's choice (ActionRequest::exclude: nodes out of service, the failure's suspects and the
// ledger's) and the nodes its submitter excluded (sbatch --exclude), which a resubmission would
// drop unless it names them and a list set on a pending task would overwrite.
#include <string>
#include <vector>

#include "action.h"
#include "slurm/slurm_client.h"

namespace llmwatch {

struct TaskExclusions {
  std::vector<std::string> own;     // what the task excludes itself
  bool own_known = false;           // false: neither squeue nor scontrol said
  std::vector<std::string> merged;  // its own, then ours not among them
  bool adds() const { return merged.size() > own.size(); }
};

// The pending tasks of the request's array (a range "3_[4-10%1]", or a single last task
// "3_10"), which Slurm starts when the task before leaves; null when there are none.
const SlurmJob* next_array_task(const ActionRequest& r);

// The task's own list from squeue (JSON), else `scontrol show job` (the text format has no field
// for it); unknown when neither says (Slurm forgot the task, scontrol failed).
TaskExclusions exclusions_for(const SlurmJob& task, const std::vector<std::string>& ours,
                              SlurmClient& slurm);

// Keeps a pending task (held after a failed launch, requeued) off `ours` besides what it
// excludes itself: one `scontrol update` when ours adds to its list. What was done, for the
// action's detail: "" when nothing needed doing; a failure or an unknown list of its own is
// said, never guessed over (an update replaces the list: one not known would be lost).
std::string keep_pending_task_off(const SlurmJob& task, const std::vector<std::string>& ours,
                                  SlurmClient& slurm);

}  // namespace llmwatch
