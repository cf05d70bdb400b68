// cancel, where the plan restarts the run and an array's next task starts by itself: Slurm
// starts that task within a second of the cancel (measured on the local cluster: a restart's
// update after it was refused, "Job is no longer pending execution"), so the cancel keeps it
// off the nodes a restart excludes first.
#include <gtest/gtest.h>

#include "cycle/phases.h"
#include "phase_fixture.h"

namespace llmwatch {
namespace {

constexpr double kArrayHungAt = 1'700'000'600;

// Task 40_1 of array 40 hung, 40_[2-9%1] pending; node-3 holds two incidents in the ledger.
void hang_of_array(testing::PhaseFixture& p) {
  for (int i = 0; i < 2; ++i)
    p.store->add_incident(kArrayHungAt - 3600 + i, "node-3", "5@" + std::to_string(i),
                          "tr crashed, attributed to node-3");
  auto s = p.state(kArrayHungAt);
  auto& w = p.watch(s, "tr", 41);
  w.obs.running->array_job_id = 40;
  w.obs.running->array_task_id = 1;
  w.obs.running->excluded_nodes = "";
  SlurmJob rest = *w.obs.running;
  rest.state = "PENDING";
  rest.array_task_id.reset();
  rest.array_task_string = "2-9%1";
  w.obs.entries = {*w.obs.running, rest};
  p.slurm.jobs = w.obs.entries;
  s.findings = {make_finding("job:tr", "tr", "hung", Severity::Critical, "no step for 20m")};
  act_phase(s);
}

TEST(CancelAction, AnArraysNextTaskIsKeptOffBeforeTheCancelLetsItStart) {
  testing::PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"cancel\", \"restart\"]\n");
  hang_of_array(p);
  EXPECT_EQ(p.slurm.cancelled, std::vector<std::string>{"40_1"});
  EXPECT_EQ(p.slurm.exclusions_set, std::vector<std::string>{"40_[2-9] node-3"}) << p.events();
  EXPECT_NE(p.events().find("scancel 40_1; its next task excluding node-3"), std::string::npos)
      << p.events();
  // The restart says what Slurm does in its place, and sets no list again.
  EXPECT_NE(p.events().find("restart done: next task of array 40_[2-9%1] starts by itself\n"),
            std::string::npos)
      << p.events();
}

// A cancel that restarts nothing leaves the array's tasks as they are.
TEST(CancelAction, ACancelAloneSetsNoList) {
  testing::PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"cancel\"]\n");
  hang_of_array(p);
  EXPECT_EQ(p.slurm.cancelled.size(), 1u);
  EXPECT_TRUE(p.slurm.exclusions_set.empty()) << p.events();
}

}  // namespace
}  // namespace llmwatch
