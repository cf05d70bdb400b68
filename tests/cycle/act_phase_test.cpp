// The act phase alone: findings as the checks left them, against a FakeSlurm. It records each
// finding, then runs the plan the policy picks through the executor (journal, dry-run, fence).
#include <gtest/gtest.h>

#include "cycle/phases.h"
#include "phase_fixture.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

using testing::kNow;
const std::string kJob = "[[job]]\nname = \"tr\"\non_hang = [\"alert\", \"cancel\"]\n";

Finding hung(Severity severity = Severity::Critical) {
  return make_finding("job:tr", "tr", "hung", severity, "no step for 20m");
}

std::vector<ActionRow> journal(PhaseFixture& p, const std::string& kind) {
  std::vector<ActionRow> out;
  for (const auto& a : p.store->recent_actions(100))
    if (a.kind == kind) out.push_back(a);
  return out;
}

TEST(ActPhase, ANewFindingIsRecordedAndItsPlanRunsThroughTheJournalOnce) {
  PhaseFixture p(kJob);
  {
    auto s = p.state(kNow);
    p.watch(s, "tr", 42);
    s.findings = {hung()};
    act_phase(s);
    EXPECT_EQ(s.result.new_findings, 1);
    EXPECT_TRUE(p.firing("job:tr/hung"));
  }
  EXPECT_EQ(p.slurm.cancelled, std::vector<std::string>{"42"});
  auto cancels = journal(p, "cancel");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].subject, "tr");
  // The same episode next cycle: journaled already, not run again.
  auto s = p.state(kNow + 30);
  p.watch(s, "tr", 42);
  s.findings = {hung()};
  act_phase(s);
  EXPECT_EQ(s.result.new_findings, 0);
  EXPECT_EQ(p.slurm.cancelled.size(), 1u);
}

TEST(ActPhase, AnUnknownFindingIsRecordedButNeverActs) {
  PhaseFixture p(kJob);
  auto s = p.state(kNow);
  p.watch(s, "tr", 42);
  s.findings = {hung(Severity::Unknown)};
  act_phase(s);
  EXPECT_TRUE(p.firing("job:tr/hung"));
  EXPECT_TRUE(p.slurm.cancelled.empty());
  EXPECT_TRUE(p.store->recent_actions(10).empty());
}

TEST(ActPhase, AFencedSupervisorRecordsWhatItSawButDoesNothing) {
  PhaseFixture p(kJob);
  auto s = p.state(kNow);
  s.fence = [] { return std::string("the lease is held by host-b"); };
  p.watch(s, "tr", 42);
  s.findings = {hung()};
  act_phase(s);
  EXPECT_TRUE(p.firing("job:tr/hung"));
  EXPECT_TRUE(p.slurm.cancelled.empty());
  EXPECT_TRUE(journal(p, "cancel").empty());
  ASSERT_FALSE(s.errors.empty());
  EXPECT_NE(s.errors.back().find("not acting: the lease is held by host-b"), std::string::npos);
}

TEST(ActPhase, DryRunJournalsThePlanAndRunsNothing) {
  PhaseFixture p(kJob, "dry_run = true\n");
  auto s = p.state(kNow);
  p.watch(s, "tr", 42);
  s.findings = {hung()};
  act_phase(s);
  EXPECT_TRUE(p.slurm.cancelled.empty());
  auto cancels = journal(p, "cancel");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_NE(cancels[0].state.find("dry"), std::string::npos) << cancels[0].state;
}

// A node's plan runs before the plans of the jobs on it: the faulty node is out of service
// before anything restarts there.
TEST(ActPhase, NodePlansRunBeforeJobPlans) {
  PhaseFixture p(kJob);
  auto s = p.state(kNow);
  SlurmNode gpu1{"gpu1", "allocated", {}, "", "", {"batch"}, ""};
  for (int i = 1; i <= 16; ++i) {
    SlurmNode n = gpu1;
    n.name = "gpu" + std::to_string(i);
    p.slurm.node_list.push_back(n);
  }
  s.nodes = SinfoParse{p.slurm.node_list, ""};
  p.slurm.shown_nodes["gpu1"] = {{"NodeName", "gpu1"}, {"State", "ALLOCATED"}};
  p.watch(s, "tr", 42);
  Finding xid = make_finding("node:gpu1", "gpu1", "xid", Severity::Critical, "Xid 79");
  s.findings = {hung(), xid};
  s.node_plans[xid.key] = {"drain"};
  act_phase(s);
  auto drains = journal(p, "drain"), cancels = journal(p, "cancel");
  ASSERT_EQ(drains.size(), 1u) << p.events();
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_LT(drains[0].id, cancels[0].id);
  EXPECT_EQ(p.slurm.controls, std::vector<std::string>{"update gpu1 drain"})
      << drains[0].state << ": " << drains[0].detail;
}

}  // namespace
}  // namespace llmwatch
