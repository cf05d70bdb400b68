// hold (`scontrol hold` of a watched job's pending tasks) is done once an episode of the finding
// that asks for it: a crash loop held, released by a person, and come back is held again.
#include <gtest/gtest.h>

#include <algorithm>

#include "cycle/phases.h"
#include "phase_fixture.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

// One cycle's act phase: the run's task 43 pending, and a crash loop found.
void cycle(PhaseFixture& p, double now) {
  auto s = p.state(now);
  auto& w = p.watch(s, "tr", 42);
  SlurmJob pending = PhaseFixture::running(43, "tr");
  pending.state = "PENDING";
  w.obs.running.reset();
  w.obs.entries = {pending};
  s.findings = {make_finding("job:tr", "tr", "crash-loop", Severity::Critical, "3 runs")};
  act_phase(s);
}

int holds(const PhaseFixture& p) {
  return static_cast<int>(
      std::count(p.slurm.controls.begin(), p.slurm.controls.end(), std::string("hold 43")));
}

// The defect: the hold's key was the finding's alone, so after the first loop's hold was done
// no later loop of the job was ever held: its tasks went on starting and dying.
TEST(HoldAction, ALoopThatComesBackAfterAReleaseIsHeldAgain) {
  PhaseFixture p("[[job]]\nname = \"tr\"\n");
  cycle(p, testing::kNow);
  cycle(p, testing::kNow + 30);  // the same loop, still firing: held once
  EXPECT_EQ(holds(p), 1) << p.events();
  // Released by a person, the run trained on, and the loop's finding cleared.
  p.store->resolve_absent({"job:tr/"}, {}, testing::kNow + 60);
  ASSERT_FALSE(p.firing("job:tr/crash-loop"));
  cycle(p, testing::kNow + 900);
  EXPECT_EQ(holds(p), 2) << p.events();
}

}  // namespace
}  // namespace llmwatch
