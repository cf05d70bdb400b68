// The node-health rule, pure: verdicts, Slurm's view and the store's memory in; findings out.
#include "rules/node_findings.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

constexpr double kNow = 1'800'000'000;

NodeReport report(const std::string& node, Verdict v, double ts = kNow) {
  NodeReport r;
  r.node = node;
  r.ts = ts;
  r.verdict = v;
  r.gpus[0] = v;
  if (v != Verdict::Ok) r.items.push_back({"xid", 0, v, "", "Xid 79 GPU 0", {"NVRM: Xid 79"}});
  return r;
}

SlurmNode drained(const std::string& name, const std::string& reason) {
  SlurmNode n;
  n.name = name;
  n.state = "idle";
  n.flags = {"DRAIN"};
  n.reason = reason;
  return n;
}

const Finding* find(const NodeJudgement& j, const std::string& key) {
  for (const auto& f : j.findings)
    if (f.key == key) return &f;
  return nullptr;
}

TEST(NodeFindings, EachVerdictHasItsFindingUnderOneKey) {
  NodeFacts facts;
  facts.now = kNow;
  facts.reports = {{"a", report("a", Verdict::Critical)},
                   {"b", report("b", Verdict::Warn)},
                   {"c", report("c", Verdict::Unknown)},
                   {"d", report("d", Verdict::Critical, kNow - 7200)},  // stale
                   {"e", report("e", Verdict::Ok)}};
  auto j = judge_nodes(GpuSettings{}, facts);
  ASSERT_TRUE(find(j, "node:a/gpu"));
  EXPECT_EQ(find(j, "node:a/gpu")->kind, "gpu-fault");
  EXPECT_EQ(find(j, "node:b/gpu")->kind, "gpu-warn");
  EXPECT_EQ(find(j, "node:c/gpu")->kind, "gpu-unknown");
  EXPECT_EQ(find(j, "node:d/gpu")->kind, "gpu-unknown");  // old news is no fault
  EXPECT_EQ(find(j, "node:e/gpu"), nullptr);
  EXPECT_EQ(j.bad_nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(j.unknown, 2);
  EXPECT_EQ(j.scopes.size(), 5u);  // every node with a report: its old findings may resolve
}

// After a reboot llmwatch asked for, the verdict from before the boot is about the GPU before
// its reset: the node waits (unknown, never acted on) for a check after the boot, and a
// reset-class fault that survives the reboot is drained for a human, not rebooted again.
TEST(NodeFindings, ARebootedNodeWaitsForACheckAfterItsBootAndAFaultThatSurvivesIsAHumans) {
  NodeFacts facts;
  facts.now = kNow;
  facts.booted = {{"a", kNow - 60}, {"b", kNow - 60}};
  facts.reports = {{"a", report("a", Verdict::Critical, kNow - 120)}};
  facts.reports["a"].items[0].hint = "reset";
  auto j = judge_nodes(GpuSettings{}, facts);
  ASSERT_TRUE(find(j, "node:a/reboot"));
  EXPECT_EQ(find(j, "node:a/reboot")->severity, Severity::Unknown);
  EXPECT_EQ(find(j, "node:a/gpu"), nullptr);  // the old fault resolves: a new one is new
  ASSERT_TRUE(find(j, "node:b/reboot"));      // no report at all: waiting too
  EXPECT_TRUE(j.bad_nodes.empty());
  EXPECT_EQ(j.unknown, 2);
  EXPECT_EQ(j.scopes, (std::vector<std::string>{"node:b/", "node:a/"}));

  facts.reports["a"].ts = kNow - 10;  // checked after the boot: still Xid 79
  j = judge_nodes(GpuSettings{}, facts);
  ASSERT_TRUE(find(j, "node:a/gpu"));
  EXPECT_EQ(find(j, "node:a/gpu")->cause, "");  // not "a reset heals": drained, not rebooted
  EXPECT_NE(find(j, "node:a/gpu")->evidence.back().find("did not clear it"), std::string::npos);
  EXPECT_EQ(find(j, "node:a/reboot"), nullptr);
  facts.booted.clear();  // never rebooted: a reset may heal it
  EXPECT_EQ(find(judge_nodes(GpuSettings{}, facts), "node:a/gpu")->cause, kResetHeals);
}

TEST(NodeFindings, RepairedOnlyWhenACheckPassesAfterOurDrain) {
  GpuSettings g;
  g.undrain = true;
  NodeFacts facts;
  facts.now = kNow;
  facts.nodes = {drained("a", "llmwatch: Xid 79"), drained("b", "llmwatch: Xid 79"),
                 drained("c", "bad DIMM - ticket 12")};
  facts.drained_at = {{"a", kNow - 600}, {"b", kNow - 60}};
  facts.reports = {{"a", report("a", Verdict::Ok, kNow - 120)},   // after the drain
                   {"b", report("b", Verdict::Ok, kNow - 120)},   // before it: proves nothing
                   {"c", report("c", Verdict::Ok, kNow - 120)}};  // a human's drain
  auto j = judge_nodes(g, facts);
  ASSERT_TRUE(find(j, "node:a/repaired"));
  EXPECT_FALSE(find(j, "node:b/repaired"));
  EXPECT_FALSE(find(j, "node:c/repaired"));
  g.undrain = false;
  EXPECT_FALSE(find(judge_nodes(g, facts), "node:a/repaired"));
}

TEST(NodeFindings, KillTaskFailedNeedsNoProcessesLeft) {
  GpuSettings g;
  g.undrain = true;
  g.undrain_kill_task_failed = true;
  NodeFacts facts;
  facts.now = kNow;
  facts.nodes = {drained("a", "Kill task failed")};
  facts.reports = {{"a", report("a", Verdict::Ok)}};
  facts.reports["a"].gpu_processes = 1;
  EXPECT_FALSE(find(judge_nodes(g, facts), "node:a/repaired"));
  facts.reports["a"].gpu_processes = 0;
  EXPECT_TRUE(find(judge_nodes(g, facts), "node:a/repaired"));
}

TEST(NodeFindings, LemonsAmongManagedNodesOnly) {
  GpuSettings g;
  g.lemon_failures = 3;
  NodeFacts facts;
  facts.now = kNow;
  facts.managed = {"a", "b", "c"};
  facts.incidents = {{"a", 3}, {"b", 2}, {"x", 9}, {"c", 5}};
  facts.reports = {{"c", report("c", Verdict::Critical)}};  // has its gpu-fault already
  auto j = judge_nodes(g, facts);
  EXPECT_TRUE(find(j, "node:a/lemon"));
  EXPECT_FALSE(find(j, "node:b/lemon"));
  EXPECT_FALSE(find(j, "node:x/lemon"));  // not ours to judge
  EXPECT_FALSE(find(j, "node:c/lemon"));
}

// A lemon passes its checks (its faults are intermittent: that is why it is counted). Drained
// as one, a passing check after the drain is no repair while its incidents still make it one.
// Before, it was "repaired": returned to service at its first passing check.
TEST(NodeFindings, ADrainedLemonIsNotReturnedWhileItsIncidentsStillCount) {
  GpuSettings g;
  g.undrain = true;
  g.lemon_failures = 3;
  NodeFacts facts;
  facts.now = kNow;
  facts.managed = {"a"};
  facts.nodes = {drained("a", "llmwatch: lemon: suspect node: 3 incidents")};
  facts.drained_at = {{"a", kNow - 600}};
  facts.reports = {{"a", report("a", Verdict::Ok)}};
  facts.incidents = {{"a", 3}};
  auto j = judge_nodes(g, facts);
  EXPECT_FALSE(find(j, "node:a/repaired"));
  facts.incidents = {{"a", 2}};  // one withdrawn, or aged out of the window
  EXPECT_TRUE(find(judge_nodes(g, facts), "node:a/repaired"));
}

TEST(NodeFindings, AWatchedTaskOnABadNodeMustMoveOrSave) {
  NodeFacts facts;
  facts.now = kNow;
  facts.reports = {{"n2", report("n2", Verdict::Critical)}, {"n5", report("n5", Verdict::Warn)}};
  facts.reports["n5"].items[0].hint = "save";
  SlurmJob on_bad, on_degraded, elsewhere;
  on_bad.job_id = 1;
  on_bad.nodes = "n[1-2]";
  on_degraded.job_id = 2;
  on_degraded.nodes = "n5";
  elsewhere.job_id = 3;
  elsewhere.nodes = "n9";
  facts.running = {{"big", on_bad}, {"mid", on_degraded}, {"small", elsewhere}};
  auto j = judge_nodes(GpuSettings{}, facts);
  ASSERT_TRUE(find(j, "job:big/node-fault"));
  EXPECT_EQ(find(j, "job:big/node-fault")->severity, Severity::Critical);
  EXPECT_TRUE(find(j, "job:mid/node-degraded"));
  EXPECT_FALSE(find(j, "job:small/node-fault"));
}

}  // namespace
}  // namespace llmwatch
