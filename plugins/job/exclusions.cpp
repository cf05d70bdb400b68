#include "job/exclusions.h"

#include <algorithm>

#include "slurm/hostlist.h"
#include "slurm/slurm_text.h"

namespace llmwatch {

const SlurmJob* next_array_task(const ActionRequest& r) {
  for (const auto& q : r.queue)
    if (q.pending() && q.is_array() &&
        (!r.task ||
         (q.array_job_id == r.task->array_job_id && q.display_id() != r.task->display_id())))
      return &q;
  return nullptr;
}

TaskExclusions exclusions_for(const SlurmJob& task, const std::vector<std::string>& ours,
                              SlurmClient& slurm) {
  TaskExclusions out;
  std::optional<std::string> own = task.excluded_nodes;
  if (!own) {
    // scontrol takes no remainder's id ("3_[4-10]"): it shows the array's pending remainder
    // under the array's id, first of its tasks. Any other record is not the task's.
    const bool remainder = task.is_array() && !task.array_task_id;
    auto shown = slurm.show_job(remainder ? std::to_string(task.job_id) : task.control_id());
    if (!remainder || shown["ArrayTaskId"] == task.array_task_string)
      own = scontrol_field(shown, "ExcNodeList");
  }
  if (own) out.own = hosts_in(*own);
  // A list this cannot read is not known: merged over, it would be lost.
  out.own_known = own && (own->empty() || !out.own.empty());
  out.merged = out.own;
  for (const auto& node : ours)
    if (std::find(out.merged.begin(), out.merged.end(), node) == out.merged.end())
      out.merged.push_back(node);
  return out;
}

std::string keep_pending_task_off(const SlurmJob& task, const std::vector<std::string>& ours,
                                  SlurmClient& slurm) {
  if (ours.empty()) return "";
  auto ex = exclusions_for(task, ours, slurm);
  if (!ex.own_known)
    return "not kept off " + compress_hostlist(ours) + ": what " + task.display_id() +
           " excludes itself is unknown";
  if (!ex.adds()) return "";
  const std::string list = compress_hostlist(ex.merged);
  if (auto set = slurm.set_excluded_nodes(task.control_id(), list); !set)
    return "not kept off " + compress_hostlist(ours) + ": " + set.error();
  return "excluding " + list;
}

}  // namespace llmwatch
