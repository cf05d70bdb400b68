#include "policy/node_policy.h"

#include <algorithm>
#include <cmath>

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

namespace {

// on_critical for a node, without "drain" when that would take too much of its partition out
// (the finding then says so), and always announced.
std::vector<std::string> critical_plan(const GpuSettings& g, const std::vector<SlurmNode>& nodes,
                                       std::set<std::string>& draining_now, Finding& f) {
  std::vector<std::string> plan = g.on_critical;
  if (std::find(plan.begin(), plan.end(), "drain") != plan.end()) {
    std::string blocked = drain_blocked(f.subject, nodes, g.max_drained_fraction, draining_now);
    if (!blocked.empty()) {
      plan.erase(std::remove(plan.begin(), plan.end(), "drain"), plan.end());
      f.evidence.push_back("not drained: " + blocked);
    } else {
      draining_now.insert(f.subject);
    }
  }
  if (std::find(plan.begin(), plan.end(), "alert") == plan.end()) plan.push_back("alert");
  return plan;
}

}  // namespace

std::map<std::string, std::vector<std::string>> plan_node_findings(
    const GpuSettings& g, const std::vector<SlurmNode>& nodes, std::vector<Finding>& findings) {
  std::map<std::string, std::vector<std::string>> plans;
  std::set<std::string> draining_now;  // planned this cycle: they count against the fraction
  for (auto& f : findings) {
    if (f.key.rfind("node:", 0) != 0) continue;
    if (f.kind == "gpu-fault" || f.kind == "lemon")
      plans[f.key] = critical_plan(g, nodes, draining_now, f);
    else if (f.kind == "gpu-warn")
      plans[f.key] = {"alert"};
    else if (f.kind == "repaired")
      plans[f.key] = {"undrain", "alert"};
  }
  return plans;
}

}  // namespace llmwatch
