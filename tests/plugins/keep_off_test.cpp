// keep-off: a restart llmwatch queued behind a dying task (rules/queued_restart.h) is kept off
// nodes the crash was attributed to after it was queued, while it waits: its list as Slurm
// holds it, merged (an update replaces the list), and only as far as the run still fits.
#include <gtest/gtest.h>

#include "cycle/phases.h"
#include "phase_fixture.h"
#include "rules/queued_restart.h"
#include "store/keys.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

constexpr double kCrashAt = 1'700'000'600;

// Task 7 (its own --exclude: node-4) still dies; job 1001 is queued behind it, off node-4.
// The crash's lines now name `named`; `spare` nodes of the partition are left over. Runs the
// act phase on the rule's finding.
void named_since(PhaseFixture& p, const std::vector<std::string>& named, int spare,
                 const std::string& successor_state = "PENDING") {
  auto s = p.state(kCrashAt);
  auto& w = p.watch(s, "tr", 7);
  w.obs.running->excluded_nodes = "node-4";
  SlurmJob successor;
  successor.job_id = 1001;
  successor.name = "tr";
  successor.state = successor_state;
  successor.reason = successor_state == "PENDING" ? "Dependency" : "";
  successor.excluded_nodes = "node-4";
  w.obs.entries = {*w.obs.running, successor};
  w.spare_nodes = spare;
  QueuedRestart queued{"1001", "7", w.obs.running->start_time, "node-4"};
  if (auto stored = QueuedRestart::from_text(p.store->get(kv::queued_restart("tr")).value_or("")))
    queued = *stored;
  p.store->put(kv::queued_restart("tr"), queued.to_text(), kCrashAt);
  w.queued_restart = queued;
  // The rule asks only while the queued job is pending: a started one is given to the action.
  auto f = queued_restart_misses("tr", queued,
                                 {*w.obs.running,
                                  [&] {
                                    SlurmJob pending = successor;
                                    pending.state = "PENDING";
                                    return pending;
                                  }()},
                                 named);
  ASSERT_TRUE(f);
  s.findings = {*f};
  act_phase(s);
}

std::string queued_kept_off(const PhaseFixture& p) {
  auto queued = QueuedRestart::from_text(p.store->get(kv::queued_restart("tr")).value_or(""));
  return queued ? queued->excluded : "no record";
}

TEST(KeepOffAction, AQueuedRestartIsKeptOffNodesNamedSinceAsFarAsTheRunFits) {
  PhaseFixture p("[[job]]\nname = \"tr\"\n");
  named_since(p, {"node-2", "node-3"}, 1);  // node-4 is the run's own: it takes no room
  EXPECT_EQ(p.slurm.exclusions_set, std::vector<std::string>{"1001 node-[2,4]"}) << p.events();
  EXPECT_EQ(queued_kept_off(p), "node-[2,4]");
  EXPECT_NE(p.events().find("1001 excluding node-[2,4]"), std::string::npos) << p.events();
  // node-3 later still: no room left, nothing replaced.
  named_since(p, {"node-3"}, 1);
  EXPECT_EQ(p.slurm.exclusions_set.size(), 1u) << p.events();
}

TEST(KeepOffAction, AStartedRunOrADryRunIsLeftAsItIs) {
  PhaseFixture started("[[job]]\nname = \"tr\"\n");
  named_since(started, {"node-2"}, 2, "RUNNING");
  EXPECT_TRUE(started.slurm.exclusions_set.empty());
  EXPECT_NE(started.events().find("it started where Slurm put it"), std::string::npos)
      << started.events();

  PhaseFixture dry("[[job]]\nname = \"tr\"\n", "dry_run = true\n");
  named_since(dry, {"node-2"}, 2);
  EXPECT_TRUE(dry.slurm.exclusions_set.empty());
  EXPECT_EQ(queued_kept_off(dry), "node-4");
}

}  // namespace
}  // namespace llmwatch
