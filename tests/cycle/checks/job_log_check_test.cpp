// Which of a [[job]]'s queue entries is its running task, through whole cycles of the real
// Supervisor against a FakeSlurm.
#include <gtest/gtest.h>

#include "ending_run.h"
#include "test_util.h"

namespace llmwatch {
namespace {

using testing::EndingRun;

constexpr const char* kSrunChecks =
    "[gpu]\nenabled = true\ncollect = \"srun\"\nmanage_nodes = \"node-[1-9]\"\n";

// The arguments of the cycle's one srun node-check, as one line.
std::string only_step(EndingRun& run) {
  EXPECT_EQ(run.slurm.steps.size(), 1u);
  std::string out;
  if (!run.slurm.steps.empty())
    for (const auto& a : run.slurm.steps[0]) out += a + " ";
  return out;
}

// A cancelled task lingers COMPLETING (an epilog, a process that will not die) while the run's
// restart already RUNs, and squeue lists the old one first. The restart is the task watched:
// its allocation is the one checked. Before, the first entry Slurm listed as running was taken,
// the node-check asked in the dying job ("Slurm job 1 has expired") and the new allocation's
// failing node went unchecked for that cycle (the NodeHealth.ANewAllocationsFailingNode... CI
// failure).
TEST(JobLogCheck, ARestartRunningBesideItsEndingPredecessorIsTheTaskWatched) {
  EndingRun run(kSrunChecks);
  auto old_task = run.task("COMPLETING");
  auto restarted = run.task("RUNNING");
  restarted.job_id = 8;
  restarted.nodes = "node-[4-6]";
  restarted.start_time = old_task.start_time + 600;
  run.slurm.jobs = {old_task, restarted};
  run.cycle(run.now);
  std::string step = only_step(run);
  EXPECT_NE(step.find("--jobid=8 "), std::string::npos) << step;
  EXPECT_EQ(step.find("--jobid=7 "), std::string::npos) << step;
}

// Alone, an ending task is still the task: what it prints is judged from its end.
TEST(JobLogCheck, AnEndingTaskAloneIsStillTheTaskWatched) {
  EndingRun run(kSrunChecks);
  run.slurm.jobs = {run.task("COMPLETING")};
  run.cycle(run.now);
  std::string step = only_step(run);
  EXPECT_NE(step.find("--jobid=7 "), std::string::npos) << step;
}

}  // namespace
}  // namespace llmwatch
