#include "job/exclusions.h"

#include <algorithm>

#include "slurm/hostlist.h"
#include "slurm/partition_room.h"

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
  std::optional<std::string> own = own_excluded_nodes(task, slurm);
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
