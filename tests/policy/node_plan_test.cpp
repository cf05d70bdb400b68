// Node findings to plans: drains within max_drained_fraction, undrains, alerts. Pure: a
// report per node, a sinfo snapshot, no cluster and no store.
#include <gtest/gtest.h>

#include <algorithm>

#include "policy/node_policy.h"
#include "rules/node_findings.h"

namespace llmwatch {
namespace {

constexpr double kPlanNow = 1'800'000'000;

NodeReport critical_report(const std::string& node) {
  NodeReport r;
  r.node = node;
  r.ts = kPlanNow;
  r.verdict = Verdict::Critical;
  r.gpus[0] = Verdict::Critical;
  r.items.push_back({"xid", 0, Verdict::Critical, "drain", "Xid 79 GPU 0: fallen off", {}});
  return r;
}

std::vector<SlurmNode> ten_idle_nodes() {
  std::vector<SlurmNode> nodes;
  for (int i = 1; i <= 10; ++i) {
    SlurmNode n;
    n.name = "n" + std::to_string(i);
    n.state = "idle";
    n.partitions = {"gpu"};
    nodes.push_back(n);
  }
  return nodes;
}

// The node findings of `facts` and their plans, as the node-health check makes them.
struct Planned {
  NodeJudgement judged;
  std::map<std::string, std::vector<std::string>> plans;
};
Planned plan(const GpuSettings& g, const NodeFacts& facts) {
  Planned p{judge_nodes(g, facts), {}};
  p.plans = plan_node_findings(g, facts.nodes, p.judged.findings);
  return p;
}

// The defect: max_drained_fraction was checked against the snapshot taken at the start of
// the cycle, so 4 of 10 nodes were drained in one cycle under a 10% cap.
TEST(NodePlan, DrainsPlannedInOneCycleCountAgainstTheFraction) {
  GpuSettings g;
  g.max_drained_fraction = 0.1;
  NodeFacts facts;
  facts.now = kPlanNow;
  facts.nodes = ten_idle_nodes();
  for (int i = 1; i <= 4; ++i)
    facts.reports["n" + std::to_string(i)] = critical_report("n" + std::to_string(i));
  auto [judged, plans] = plan(g, facts);
  int drains = 0, blocked = 0;
  for (const auto& [key, plan] : plans) drains += std::count(plan.begin(), plan.end(), "drain");
  for (const auto& f : judged.findings)
    for (const auto& e : f.evidence)
      blocked += e.rfind("not drained: max_drained_fraction", 0) == 0;
  EXPECT_EQ(drains, 1);  // 10% of 10 nodes
  EXPECT_EQ(blocked, 3);
  EXPECT_EQ(plans.size(), 4u);  // every one is still alerted
  for (const auto& [key, plan] : plans) EXPECT_EQ(plan.back(), "alert") << key;
}

TEST(NodePlan, UnknownGetsNoPlanAndJobFindingsAreLeftToTheJobPolicy) {
  GpuSettings g;
  NodeFacts facts;
  facts.now = kPlanNow;
  facts.nodes = ten_idle_nodes();
  facts.reports["n1"] = critical_report("n1");
  facts.reports["n1"].ts = kPlanNow - 3600;  // stale: unknown, never a drain
  facts.reports["n2"] = critical_report("n2");
  SlurmJob task;
  task.job_id = 7;
  task.nodes = "n[2-3]";
  facts.running.push_back({"tr", task});
  auto [judged, plans] = plan(g, facts);
  EXPECT_EQ(plans.count("node:n1/gpu"), 0u);
  EXPECT_EQ(plans.count("node:n2/gpu"), 1u);
  EXPECT_EQ(plans.count("job:tr/node-fault"), 0u);
}

// A GPU a reset heals gets Slurm's reboot ASAP (drain, reboot when idle, resume), within the
// same drain limits; one that needs a human is drained; on_reset = [] keeps the old ways.
TEST(NodePlan, AResetClassFaultIsRebootedNotLeftDrained) {
  GpuSettings g;
  g.max_drained_fraction = 1;
  NodeFacts facts;
  facts.now = kPlanNow;
  facts.nodes = ten_idle_nodes();
  facts.reports["n1"] = critical_report("n1");
  facts.reports["n1"].items[0].hint = "reset";  // Xid 79: the catalogue says reset
  facts.reports["n2"] = critical_report("n2");  // hint "drain": needs a human
  facts.reports["n3"] = critical_report("n3");
  facts.reports["n3"].verdict = Verdict::Warn;  // row remap pending: reset when idle
  facts.reports["n3"].items[0] = {"remap", 0, Verdict::Warn, "save", "row remapping pending", {}};
  auto [judged, plans] = plan(g, facts);
  EXPECT_EQ(plans["node:n1/gpu"], (std::vector<std::string>{"reboot", "alert"}));
  EXPECT_EQ(plans["node:n2/gpu"], (std::vector<std::string>{"drain", "alert"}));
  EXPECT_EQ(plans["node:n3/gpu"], (std::vector<std::string>{"reboot", "alert"}));

  g.max_drained_fraction = 0.1;  // one node of ten: the first takes it, the others may not
  plans = plan(g, facts).plans;
  EXPECT_EQ(plans["node:n1/gpu"], (std::vector<std::string>{"reboot", "alert"}));
  EXPECT_EQ(plans["node:n2/gpu"], (std::vector<std::string>{"alert"}));
  EXPECT_EQ(plans["node:n3/gpu"], (std::vector<std::string>{"alert"}));

  g.on_reset.clear();
  g.max_drained_fraction = 1;
  plans = plan(g, facts).plans;
  EXPECT_EQ(plans["node:n1/gpu"], (std::vector<std::string>{"drain", "alert"}));
  EXPECT_EQ(plans["node:n3/gpu"], (std::vector<std::string>{"alert"}));
}

}  // namespace
}  // namespace llmwatch
