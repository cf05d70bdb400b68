// Every way a run ends, through whole cycles of the real Supervisor against a FakeSlurm: the
// post-mortem's class decides the policy, and a restart avoids the attributed node only.
#include <gtest/gtest.h>

#include "cycle/supervisor.h"
#include "ending_run.h"
#include "rules/node_report.h"
#include "store/store.h"
#include "store_reading.h"
#include "test_util.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

using testing::EndingRun;
using testing::kCudaError;
using testing::node_check_json;
using testing::write_file;

// The crash: node-2's rank printed an NCCL WARN, then the task failed. llmwatch said
// only "absent", with no cause and no restart (and on_absent = restart put it back on node-2).
TEST(PostMortem, AnNcclCrashRestartsOffTheNodeThatPrintedIt) {
  EndingRun run;
  run.idle_nodes(5);
  auto r = run.runs_then_ends(
      "node-2:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2 with "
      "error 12\nTraceback (most recent call last):\ntorch.distributed.DistBackendError: NCCL "
      "error\n",
      "FAILED");
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "NCCL or network error");
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_NE(f->summary.find("suspect node-2 (0.40)"), std::string::npos) << f->summary;
  EXPECT_FALSE(run.finding(r, "absent"));
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << "restarted by default";
  EXPECT_NE(run.submitted().find("--exclude=node-2 "), std::string::npos) << run.submitted();
  // The suspicion ledger charges node-2 alone.
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-2", 1}}));
  // Kept for `llmwatch job` and made once.
  EXPECT_NE(run.store->get("postmortem:tr").value_or("").find("\"node-2\""), std::string::npos);
  run.slurm.submitted.clear();
  Supervisor(run.config, *run.store, run.slurm).run_cycle(run.now + 60);
  EXPECT_TRUE(run.slurm.submitted.empty()) << "one restart per task";
}

// The run's end as the cycle told it, with its class and severity; an end told is not "absent".
void expect_ended(EndingRun& run, const CycleResult& r, const std::string& cause, Severity sev) {
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, cause);
  EXPECT_EQ(f->severity, sev);
  EXPECT_FALSE(run.finding(r, "absent"));
}

// A completed run is done: never restarted, even with on_absent = restart (before: absent,
// and the finished run was submitted again).
TEST(PostMortem, ACompletedRunIsNeverRestarted) {
  EndingRun run("on_absent = [\"restart\"]\n");
  auto r = run.runs_then_ends("training finished\n", "COMPLETED", true, "0:0");
  expect_ended(run, r, "completed", Severity::Info);
  EXPECT_TRUE(run.slurm.submitted.empty());
}

TEST(PostMortem, APersonsCancelIsNotRestartedAndATimeLimitContinues) {
  EndingRun cancelled;
  auto r = cancelled.runs_then_ends("", "CANCELLED", false);
  EXPECT_EQ(cancelled.finding(r, "ended")->cause, "cancelled");
  EXPECT_TRUE(cancelled.slurm.submitted.empty());
  EndingRun timeout;
  r = timeout.runs_then_ends("", "TIMEOUT", false, "0:1");
  EXPECT_EQ(timeout.finding(r, "ended")->cause, "time limit");
  ASSERT_EQ(timeout.slurm.submitted.size(), 1u);
  EXPECT_EQ(timeout.submitted().find("--exclude"), std::string::npos) << timeout.submitted();
}

// An OOM or a Python error is never a node's fault: restarted, excluding no node and
// charging none (before: every node of the run was excluded and charged).
TEST(PostMortem, ASoftwareErrorBlamesNoNode) {
  EndingRun run;
  auto r =
      run.runs_then_ends("Traceback (most recent call last):\nKeyError: 'input_ids'\n", "FAILED");
  EXPECT_EQ(run.finding(r, "ended")->cause, "software error");
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_EQ(run.submitted().find("--exclude"), std::string::npos) << run.submitted();
  EXPECT_TRUE(run.store->incident_counts(0).empty());
}

// The suspicion ledger across jobs: a node with repeated incidents (crashes attributed to it,
// GPU warnings) stays out of every restart, not only out of the run that crashed on it,
// while it waits for the lemon drain. Counts older than lemon_window no longer count.
// A run Slurm says FAILED with nothing printed why (a segfault in an extension, a SIGKILL from
// the host's OOM killer where no cgroup counts it, a rank's exit(1)): a crash, restarted within
// the crash-loop budget, blaming no node. Before, its cause was "unknown", only announced (and
// "absent"), and the run stayed down.
TEST(PostMortem, ASilentFailureIsRestartedBlamingNoNode) {
  EndingRun run;
  auto r = run.runs_then_ends("global_step: 2\n", "FAILED", true, "0:9");
  expect_ended(run, r, "silent failure", Severity::Critical);
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_EQ(run.submitted().find("--exclude"), std::string::npos) << run.submitted();
  EXPECT_TRUE(run.store->incident_counts(0).empty());
  // Slurm no longer knowing the task is no failure it saw: still only announced.
  EndingRun forgotten;
  r = forgotten.runs_then_ends("global_step: 2\n", "", false, "");
  EXPECT_EQ(forgotten.finding(r, "ended")->cause, "unknown cause");
  EXPECT_TRUE(forgotten.slurm.submitted.empty());
}

TEST(PostMortem, TheLedgerKeepsARestartOffARepeatedSuspect) {
  EndingRun run;
  run.slurm.node_list = {
      {"node-1", "idle", {}, "", "", {"gpu"}, ""}, {"node-2", "idle", {}, "", "", {"gpu"}, ""},
      {"node-3", "idle", {}, "", "", {"gpu"}, ""}, {"node-7", "idle", {}, "", "", {"gpu"}, ""},
      {"node-8", "idle", {}, "", "", {"gpu"}, ""}, {"node-9", "idle", {}, "", "", {"gpu"}, ""}};
  for (int i = 0; i < 2; ++i)
    run.store->add_event(run.now - 3600, "incident", "node-7", "warning", "other job crashed");
  run.store->add_event(run.now - 30 * 86400, "incident", "node-8", "warning", "long ago");
  run.store->add_event(run.now - 30 * 86400, "incident", "node-8", "warning", "long ago");
  run.runs_then_ends("Traceback (most recent call last):\nKeyError: 'x'\n", "FAILED");
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_NE(run.submitted().find("--exclude=node-7 "), std::string::npos) << run.submitted();
}

// #30: a restart after *any* failure keeps off the nodes the ledger holds above its threshold,
// not only after a crash: a hung run restarted onto node-7 (two incidents this week) would land
// on a bad node again. Before, only crashed and ended findings asked the ledger.
TEST(PostMortem, TheLedgerKeepsEveryRestartOffARepeatedSuspectAHangsToo) {
  EndingRun run("stale_after = \"2m\"\non_hang = [\"cancel\", \"restart\", \"alert\"]\n");
  run.idle_nodes(9);
  for (int i = 0; i < 2; ++i)
    run.store->add_event(run.now - 3600, "incident", "node-7", "warning", "other job crashed");
  write_file(run.log, "global_step: 1\n");
  run.slurm.jobs = {run.task("RUNNING")};
  run.cycle(run.now);
  write_file(run.log, "global_step: 2\n", true);
  run.cycle(run.now + 30);
  for (double t = 60; t <= 420; t += 30) run.cycle(run.now + t);  // silent for 6 min: hung
  ASSERT_EQ(run.slurm.cancelled.size(), 1u) << testing::event_lines(*run.store);
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << testing::event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--exclude=node-7"), std::string::npos) << run.submitted();
}

// llmwatch first looks after the task ended (it started and died between two looks, or
// llmwatch was down): squeue still lists it as FAILED, and that is enough.
TEST(PostMortem, ACrashFirstSeenAfterTheTaskEnded) {
  EndingRun run;
  write_file(run.log,
             "global_step: 1\n[rank2]: RuntimeError: CUDA error: an illegal memory "
             "access was encountered\n");
  run.slurm.jobs = {run.task("FAILED")};
  auto r = Supervisor(run.config, *run.store, run.slurm).run_cycle(run.now);
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f) << "no post-mortem for a task never seen running";
  EXPECT_EQ(f->cause, "GPU error");
  EXPECT_EQ(run.slurm.submitted.size(), 1u);
}

// Slurm shows one of the run's nodes down: the node failure is blamed on it.
TEST(PostMortem, ANodeFailureBlamesTheNodeSlurmLost) {
  EndingRun run;
  run.slurm.node_list = {{"node-1", "idle", {}, "", "", {"gpu"}, ""},
                         {"node-2", "down", {"NOT_RESPONDING"}, "Not responding", "", {"gpu"}, ""},
                         {"node-3", "idle", {}, "", "", {"gpu"}, ""},
                         {"node-4", "idle", {}, "", "", {"gpu"}, ""}};
  auto r = run.runs_then_ends("", "NODE_FAIL", false);
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "node failure");
  EXPECT_NE(f->summary.find("suspect node-2"), std::string::npos) << f->summary;
  EXPECT_NE(run.submitted().find("--exclude=node-2 "), std::string::npos) << run.submitted();
}

// A crash no line attributes but that may be a node's (a CUDA error with no node named):
// before the restart, a quick node-check as a short job on the nodes the task left; the node
// that fails it is excluded and charged, the others are not. Before: no node excluded, and the
// restart could land on the failed GPU again.

TEST(PostMortem, AnUnattributedGpuCrashChecksTheNodesBeforeTheRestart) {
  EndingRun run("[gpu]\nenabled = true\ncollect = \"results\"\n");
  run.slurm.step_output = node_check_json("node-1", Verdict::Ok, run.now + 30) +
                          node_check_json("node-3", Verdict::Critical, run.now + 30);
  auto r = run.runs_then_ends(kCudaError, "FAILED");
  ASSERT_EQ(run.slurm.steps.size(), 1u);
  std::string step;
  for (const auto& a : run.slurm.steps[0]) step += a + " ";
  EXPECT_NE(step.find("--nodelist=node-[1-3] "), std::string::npos) << step;
  EXPECT_NE(step.find("--immediate=30 "), std::string::npos) << step;
  EXPECT_NE(step.find("node-check --json"), std::string::npos) << step;
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_NE(run.submitted().find("--exclude=node-3 "), std::string::npos) << run.submitted();
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-3", 1}}));
  auto f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("node-3"), std::string::npos) << f->summary;
}

// The same crash with every node passing: nothing excluded, nobody charged; and a Python error
// (no hardware class) asks no node-check at all.
TEST(PostMortem, NodesThatPassTheQuickCheckAreNotExcluded) {
  EndingRun run("[gpu]\nenabled = true\ncollect = \"results\"\n");
  run.slurm.step_output = node_check_json("node-1", Verdict::Ok, run.now + 30);
  run.runs_then_ends(kCudaError, "FAILED");
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_EQ(run.submitted().find("--exclude"), std::string::npos) << run.submitted();
  EXPECT_TRUE(run.store->incident_counts(0).empty());

  EndingRun python("[gpu]\nenabled = true\ncollect = \"results\"\n");
  python.runs_then_ends("Traceback (most recent call last):\nKeyError: 'input_ids'\n", "FAILED");
  EXPECT_TRUE(python.slurm.steps.empty());
}

}  // namespace
}  // namespace llmwatch
