#include "job/exclusions.h"

#include <algorithm>

#include "slurm/hostlist.h"

namespace llmwatch {

TaskExclusions exclusions_for(const SlurmJob& task, const std::vector<std::string>& ours,
                              SlurmClient& slurm) {
  TaskExclusions out;
  std::optional<std::string> own = task.excluded_nodes;
  if (!own) {
    auto shown = slurm.show_job(task.control_id());
    if (auto it = shown.find("ExcNodeList"); it != shown.end())
      own = it->second == "(null)" ? "" : it->second;
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
