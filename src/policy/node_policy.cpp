#include "policy/node_policy.h"

#include <algorithm>
#include <cmath>

#include "rules/node_findings.h"

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

// Actions that take the node out of service at once: a reboot ASAP drains it first.
bool takes_node_out(const std::string& action) {
  return action == "drain" || action == "reboot";
}

// A node plan without what would take too much of its partition out (the finding then says
// so), and always announced.
std::vector<std::string> limited_plan(std::vector<std::string> plan, const GpuSettings& g,
                                      const std::vector<SlurmNode>& nodes,
                                      std::set<std::string>& draining_now, Finding& f) {
  if (std::any_of(plan.begin(), plan.end(), takes_node_out)) {
    std::string blocked = drain_blocked(f.subject, nodes, g.max_drained_fraction, draining_now);
    if (!blocked.empty()) {
      plan.erase(std::remove_if(plan.begin(), plan.end(), takes_node_out), plan.end());
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
    bool reset = f.cause == kResetHeals && !g.on_reset.empty();
    if ((f.kind == "gpu-fault" || f.kind == "gpu-warn") && reset)
      plans[f.key] = limited_plan(g.on_reset, g, nodes, draining_now, f);
    else if (f.kind == "gpu-fault" || f.kind == "lemon")
      plans[f.key] = limited_plan(g.on_critical, g, nodes, draining_now, f);
    else if (f.kind == "gpu-warn")
      plans[f.key] = {"alert"};
    else if (f.kind == "repaired")
      plans[f.key] = {"undrain", "alert"};
  }
  return plans;
}

}  // namespace llmwatch
