#include "policy/drain_policy.h"

#include <algorithm>
#include <cmath>

#include "util/strings.h"

namespace llmwatch {

std::string drain_blocked(const std::string& node, const std::vector<SlurmNode>& nodes,
                          double max_fraction, const std::set<std::string>& draining_now) {
  auto self =
      std::find_if(nodes.begin(), nodes.end(), [&](const SlurmNode& n) { return n.name == node; });
  std::vector<std::string> partitions;
  if (self != nodes.end()) partitions = self->partitions;
  if (partitions.empty()) partitions.push_back("");  // "": all nodes
  for (const auto& p : partitions) {
    int total = 0, out_of_service = 0;
    for (const auto& n : nodes) {
      bool member =
          p.empty() || std::find(n.partitions.begin(), n.partitions.end(), p) != n.partitions.end();
      if (!member) continue;
      ++total;
      if (n.unusable() || n.name == node || draining_now.count(n.name)) ++out_of_service;
    }
    if (total == 0) continue;
    // At least one node may always be drained, however small the partition.
    int allowed = std::max(1, static_cast<int>(std::floor(max_fraction * total)));
    if (out_of_service > allowed)
      return "max_drained_fraction (" + std::to_string(static_cast<int>(max_fraction * 100)) +
             "%) of " + (p.empty() ? std::string("the cluster") : "partition " + p) +
             " reached: " + std::to_string(out_of_service - 1) + " of " + std::to_string(total) +
             " nodes already out of service";
  }
  return "";
}

bool undrain_allowed(const SlurmNode& node, bool kill_task_failed_too) {
  if (!node.drained() && !node.down()) return false;
  if (starts_with(node.reason, kOwnReasonPrefix)) return true;
  return kill_task_failed_too && starts_with(node.reason, "Kill task failed");
}

}  // namespace llmwatch
