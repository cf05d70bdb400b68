#include "slurm/partition_room.h"

#include <algorithm>
#include <unordered_set>

#include "slurm/hostlist.h"
#include "slurm/slurm_client.h"
#include "slurm/slurm_text.h"

namespace llmwatch {
namespace {

bool in_partition(const SlurmNode& n, const std::string& partition) {
  return std::find(n.partitions.begin(), n.partitions.end(), partition) != n.partitions.end();
}

}  // namespace

int spare_nodes(int usable_in_partition, const std::vector<SlurmNode>& nodes,
                const SlurmJob& task) {
  if (task.node_count <= 0) return -1;
  int usable = usable_in_partition;
  if (task.excluded_nodes && !task.excluded_nodes->empty()) {
    auto own = hosts_in(*task.excluded_nodes);
    std::unordered_set<std::string> excluded(own.begin(), own.end());
    for (const auto& n : nodes)
      if (!n.unusable() && excluded.count(n.name) && in_partition(n, task.partition)) --usable;
  }
  return std::max(0, usable - task.node_count);
}

int spare_nodes(const std::vector<SlurmNode>& nodes, const SlurmJob& task) {
  const int usable = static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](const auto& n) {
    return !n.unusable() && in_partition(n, task.partition);
  }));
  return spare_nodes(usable, nodes, task);
}

std::optional<std::string> own_excluded_nodes(const SlurmJob& task, SlurmClient& slurm) {
  if (task.excluded_nodes) return task.excluded_nodes;
  // scontrol takes no remainder's id ("3_[4-10]"): it shows the array's pending remainder under
  // the array's id, first of its tasks. Any other record is not the task's.
  const bool remainder = task.is_array() && !task.array_task_id;
  auto shown = slurm.show_job(remainder ? std::to_string(task.job_id) : task.control_id());
  if (remainder && shown["ArrayTaskId"] != task.array_task_string) return std::nullopt;
  return scontrol_field(shown, "ExcNodeList");
}

}  // namespace llmwatch
