// A step loop through whole cycles of the real Supervisor against a FakeSlurm: runs that resume
// from their checkpoint and stop at the same step every time (a hang or a crash at one bad
// sample or code path) are restarted until crash_loop_after of them did, and then no more.
// Before, each was an ordinary hang or crash: restarted until max_restarts ran out (the chaos
// soak's hung array), each restart paying the allowance and the work since the save again.
#include <gtest/gtest.h>

#include <functional>

#include "ending_run.h"
#include "rules/job_rules.h"
#include "store/goodput_ledger.h"
#include "store_reading.h"
#include "views/goodput_view.h"

namespace llmwatch {
namespace {

using testing::EndingRun;
using testing::event_lines;
using testing::kCudaError;
using testing::write_file;

// Run k of the loop: task 7 + k, with its own log, resumed from the step-40 checkpoint.
SlurmJob loop_task(EndingRun& run, int k, const std::string& state) {
  SlurmJob t = run.task(state);
  t.job_id = 7 + k;
  t.start_time = 1'799'999'000 + 1000 * k;
  t.std_out = run.dir / ("train-" + std::to_string(t.job_id) + ".log");
  return t;
}

std::string steps(int from, int to) {
  std::string out;
  for (int n = from; n <= to; ++n) out += "global_step: " + std::to_string(n) + "\n";
  return out;
}

// Slurm's answer for a task that ended as `state`.
void ended(EndingRun& run, const SlurmJob& t, const std::string& state) {
  run.slurm.jobs = {t};
  run.slurm.jobs[0].state = state;
  run.shows_ended(state, "1:0", std::to_string(t.job_id));
}

// Task 5_k of array 5 (%1: each starts when the one before ends), with its own log.
SlurmJob array_task_of(EndingRun& run, int k) {
  SlurmJob t = run.task("RUNNING");
  t.job_id = 100 + k;
  t.array_job_id = 5;
  t.array_task_id = k;
  t.start_time = 1'799'999'000 + 1000 * k;
  t.std_out = run.dir / ("train-5_" + std::to_string(k) + ".log");
  return t;
}

// The array's tasks still queued behind 5_k.
SlurmJob queued_after_of(EndingRun& run, int k) {
  SlurmJob rest = run.task("PENDING");
  rest.job_id = 5;
  rest.array_job_id = 5;
  rest.array_task_string = std::to_string(k + 1) + "-8%1";
  rest.nodes.clear();
  return rest;
}

bool any_finding(const CycleResult& r, const std::string& kind) {
  for (const auto& f : r.findings)
    if (f.kind == kind) return true;
  return false;
}

TEST(StepLoop, ARunThatHangsAtTheSameStepEveryTimeIsNotRestartedTheThirdTime) {
  EndingRun run("confirm_hang = \"0s\"\nstale_after = \"60s\"\n");
  for (int k = 0; k < 3; ++k) {
    const double t0 = run.now + 1000 * k;
    SlurmJob t = loop_task(run, k, "RUNNING");
    run.slurm.jobs = {t};
    write_file(t.std_out, steps(41, 45));
    run.cycle(t0);
    write_file(t.std_out, steps(46, 50), true);
    run.cycle(t0 + 10);
    CycleResult r;
    const Finding* hang = nullptr;
    for (double at = t0 + 40; !hang && at < t0 + 400; at += 30) {  // a cycle every 30 s
      r = run.cycle(at);
      hang = run.finding(r, "hung");
    }
    ASSERT_TRUE(hang) << "run " << k << "\n" << event_lines(*run.store);
    EXPECT_EQ(run.slurm.cancelled.size(), static_cast<size_t>(k + 1)) << event_lines(*run.store);
    if (k < 2) {
      EXPECT_EQ(hang->cause, "");
      EXPECT_EQ(run.slurm.submitted.size(), static_cast<size_t>(k + 1))
          << "run " << k << " is restarted\n"
          << event_lines(*run.store);
    } else {
      EXPECT_EQ(hang->cause, kStepLoop);
      EXPECT_NE(hang->summary.find("the 2 runs before it (7, 8) stopped at step 50 too"),
                std::string::npos)
          << hang->summary;
      EXPECT_EQ(run.slurm.submitted.size(), 2u) << "the third is not restarted\n"
                                                << event_lines(*run.store);
      EXPECT_NE(event_lines(*run.store).find("hold skipped: nothing pending to hold"),
                std::string::npos)
          << event_lines(*run.store);
    }
    ended(run, t, "CANCELLED");
    r = run.cycle(t0 + 430);
    EXPECT_EQ(any_finding(r, "crash-loop"), k == 2) << "run " << k << "\n"
                                                    << event_lines(*run.store);
    run.slurm.jobs.clear();
  }
  EXPECT_EQ(run.slurm.submitted.size(), 2u) << event_lines(*run.store);
}

// A crash is seen once the task is gone, and the cycle before saw the run some steps short of
// where it stopped: the step the loop compares is the last the log holds, read by the
// post-mortem. Before, it was the last a cycle saw (47, 45, 49 here), and the loop went unseen.
TEST(StepLoop, ARunThatCrashesAtTheSameStepEveryTimeIsNotRestartedTheThirdTime) {
  EndingRun run;
  const int seen_to[] = {47, 45, 49};
  for (int k = 0; k < 3; ++k) {
    const double t0 = run.now + 1000 * k;
    SlurmJob t = loop_task(run, k, "RUNNING");
    run.slurm.jobs = {t};
    write_file(t.std_out, steps(41, seen_to[k]));
    run.cycle(t0);
    write_file(t.std_out, steps(seen_to[k] + 1, 50) + kCudaError, true);
    ended(run, t, "FAILED");
    auto r = run.cycle(t0 + 30);
    ASSERT_TRUE(run.finding(r, "ended")) << event_lines(*run.store);
    EXPECT_EQ(any_finding(r, "crash-loop"), k == 2) << "run " << k << "\n"
                                                    << event_lines(*run.store);
    EXPECT_EQ(run.slurm.submitted.size(), static_cast<size_t>(std::min(k + 1, 2)))
        << "run " << k << "\n"
        << event_lines(*run.store);
    run.slurm.jobs.clear();
  }
}

// Run k of the loop, seen at step 45, then gone after step 50 and `last_lines`, Slurm saying it
// ended `state` (`exit_code`): the cycle that finds it gone.
CycleResult run_stops_at_step_50(EndingRun& run, int k, const std::string& last_lines,
                                 const std::string& state, const std::string& exit_code) {
  const double t0 = run.now + 1000 * k;
  SlurmJob t = loop_task(run, k, "RUNNING");
  run.slurm.jobs = {t};
  write_file(t.std_out, steps(41, 45));
  run.cycle(t0);
  write_file(t.std_out, steps(46, 50) + last_lines, true);
  run.shows_ended(state, exit_code, std::to_string(t.job_id));
  run.slurm.jobs.clear();
  return run.cycle(t0 + 30);
}

// A run killed for memory at the same step every time (the host's OOM killer on one long
// sequence): the log prints nothing of it, and Slurm's OUT_OF_MEMORY is what says the run
// failed. Before, only a crash signature in the log or llmwatch's own cancel counted: each
// such end broke the count, and the run was restarted until max_restarts ran out.
TEST(StepLoop, ARunKilledForMemoryAtTheSameStepEveryTimeIsALoop) {
  EndingRun run;
  for (int k = 0; k < 3; ++k) {
    auto r = run_stops_at_step_50(run, k, "", "OUT_OF_MEMORY", "0:125");
    const Finding* end = run.finding(r, "ended");
    ASSERT_TRUE(end) << event_lines(*run.store);
    EXPECT_EQ(end->cause, "out of memory");
    EXPECT_EQ(any_finding(r, "crash-loop"), k == 2) << "run " << k << "\n"
                                                    << event_lines(*run.store);
    EXPECT_EQ(run.slurm.submitted.size(), static_cast<size_t>(std::min(k + 1, 2)))
        << "run " << k << "\n"
        << event_lines(*run.store);
  }
}

// Runs a person submits again, each completing at the same last step with a traceback as it
// shuts down (a logger's thread at exit): Slurm says COMPLETED, and that is no failed end.
// Before, the traceback counted, and the third such run was said to be a loop.
TEST(StepLoop, RunsThatCompleteWithATracebackAtExitAreNoLoop) {
  EndingRun run;
  for (int k = 0; k < 4; ++k) {
    auto r = run_stops_at_step_50(run, k,
                                  "Traceback (most recent call last):\nBrokenPipeError: at exit\n",
                                  "COMPLETED", "0:0");
    const Finding* end = run.finding(r, "ended");
    ASSERT_TRUE(end) << event_lines(*run.store);
    EXPECT_EQ(end->cause, "completed");
    EXPECT_FALSE(any_finding(r, "crash-loop")) << "run " << k << "\n" << event_lines(*run.store);
  }
}

// Run k of the loop, dying at step 50 of an NCCL error that node-(k+1) printed: the crash names
// that node (and the next run is kept off it).
CycleResult run_dies_of_nccl_at_step_50_on_its_node(EndingRun& run, int k) {
  return run_stops_at_step_50(
      run, k,
      "node-" + std::to_string(k + 1) +
          ":48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2 with error "
          "12\nTraceback (most recent call last):\ntorch.distributed.DistBackendError: NCCL "
          "error\n",
      "FAILED", "1:0");
}

// A loop's crashes charged the nodes that printed them (an NCCL error on whichever node held the
// rank that met the bad sample): the step, not those nodes, stopped the runs. Once the loop is
// said, their incidents are withdrawn. Before, they stayed: each such node was kept out of every
// watched job's restarts for lemon_window, and a third incident would have drained it.
TEST(StepLoop, TheNodesALoopsCrashesWereChargedToAreClearedOfThem) {
  EndingRun run;
  run.idle_nodes(6);
  for (int k = 0; k < 3; ++k) {
    auto r = run_dies_of_nccl_at_step_50_on_its_node(run, k);
    ASSERT_TRUE(run.finding(r, "ended")) << event_lines(*run.store);
    if (k == 1) {
      ASSERT_EQ(run.store->incident_counts(0),
                (std::map<std::string, int>{{"node-1", 1}, {"node-2", 1}}))
          << event_lines(*run.store);
    }
  }
  EXPECT_TRUE(run.store->incident_counts(0).empty()) << event_lines(*run.store);
  const std::string events = event_lines(*run.store);
  EXPECT_NE(events.find("withdrawn: incident of task 8 withdrawn: tr's runs 7, 8, 9 "
                        "stopped at step 50 every time: the step, not the node"),
            std::string::npos)
      << events;
  // Kept in the history as what they were.
  auto count = [&](const std::string& what) { return testing::count_of(events, what); };
  EXPECT_EQ(count("incident-withdrawn: tr ended, attributed to node-"), 3u) << events;
  EXPECT_EQ(count("withdrawn: incident of task "), 3u) << events;
}

// GPU-seconds each node is charged with in the goodput ledger ("(no node named)" for the rest),
// and the lost total.
std::map<std::string, double> lost_by_node(Store& store) {
  std::map<std::string, double> out;
  for (const auto& l : goodput_losers(GoodputLedger(store).rows(0), "node")) {
    out[l.key] = l.lost;
    out["total"] += l.lost;
  }
  return out;
}

// The GPU-hours a loop lost (each run's end, the queue, the steps redone) were charged to the
// node each crash named, and `llmwatch goodput --by node` and llmwatch_node_lost_gpu_seconds
// showed healthy nodes as the fleet's worst. Once the loop is said, they are taken back from
// those nodes, and no more is charged to them; what was lost, and to what cause, stays.
// Before, node-1 and node-2 kept their charges, and node-3 the third run's end.
TEST(StepLoop, TheGpuHoursALoopLostAreNotChargedToItsNodes) {
  EndingRun run;
  run.idle_nodes(6);
  std::map<std::string, double> before_loop;
  for (int k = 0; k < 3; ++k) {
    auto r = run_dies_of_nccl_at_step_50_on_its_node(run, k);
    ASSERT_TRUE(run.finding(r, "ended")) << event_lines(*run.store);
    if (k == 1) before_loop = lost_by_node(*run.store);
  }
  // Before the loop was said, a crash's end was its node's (an ordinary crash keeps it).
  EXPECT_GT(before_loop["node-1"], 0) << event_lines(*run.store);
  run.store->flush_goodput();
  auto after = lost_by_node(*run.store);
  EXPECT_EQ(after.size(), 2u) << "only (no node named) and the total";
  EXPECT_GT(after["(no node named)"], 0);
  EXPECT_NEAR(after["(no node named)"], after["total"], 1e-6);
  EXPECT_GT(after["total"], before_loop["total"]);  // the third run's end, counted too
  double network = 0;
  for (const auto& row : GoodputLedger(*run.store).rows(0)) {
    if (row.cause == "NCCL or network error") network += row.gpu_seconds;
    EXPECT_GE(row.gpu_seconds, 0) << row.bucket << " " << row.cause << " " << row.node;
  }
  EXPECT_GT(network, 0) << "the cause stays";
}

// An array whose next task starts by itself when one dies: no cycle sees the run ended, only
// the next task running. The task that died is read to its end before it is counted, and the
// loop holds the tasks still queued while the next one runs. Before, the count took the steps
// the cycles last saw (47, 45, 49) and the array went on through all its tasks.
TEST(StepLoop, AnArrayThatDiesAtTheSameStepEveryTimeIsHeld) {
  EndingRun run;
  const int seen_to[] = {47, 45, 49};
  CycleResult r;
  for (int k = 1; k <= 4; ++k) {
    const double t0 = run.now + 1000 * k;
    SlurmJob t = array_task_of(run, k);
    run.slurm.jobs = {t, queued_after_of(run, k)};
    write_file(t.std_out, "resumed at step 40\n");
    r = run.cycle(t0);
    EXPECT_EQ(any_finding(r, "crash-loop"), k == 4) << "task 5_" << k << "\n"
                                                    << event_lines(*run.store);
    if (k == 4) break;
    write_file(t.std_out, steps(41, seen_to[k - 1]), true);
    run.cycle(t0 + 10);
    write_file(t.std_out, steps(seen_to[k - 1] + 1, 50) + kCudaError, true);
  }
  const Finding* f = run.finding(r, "crash-loop");
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("3 runs in a row ended at step 50"), std::string::npos) << f->summary;
  EXPECT_EQ(run.slurm.controls, std::vector<std::string>{"hold 5_[5-8]"})
      << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  // A person releases the rest; 5_4 dies at step 50 too, and 5_5 starts: held again. Before,
  // the loop was one episode, its hold done, and the array went on after the release.
  run.cycle(run.now + 4100);
  write_file(array_task_of(run, 4).std_out, steps(41, 50) + kCudaError, true);
  run.slurm.jobs = {array_task_of(run, 5), queued_after_of(run, 5)};
  write_file(array_task_of(run, 5).std_out, "resumed at step 40\n");
  r = run.cycle(run.now + 5000);
  f = run.finding(r, "crash-loop");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("4 runs in a row"), std::string::npos) << f->summary;
  EXPECT_EQ(run.slurm.controls, (std::vector<std::string>{"hold 5_[5-8]", "hold 5_[6-8]"}))
      << event_lines(*run.store);
}

// Array 5's tasks 5_1 .. 5_n, each started by itself as the one before ended: resumed at step
// 40, seen at 45, and gone after step 50 and `last_lines` (of its own id). The crash-loop is
// said as task 5_`loop_at` starts, and not before (0: never).
void array_stops_at_step_50(EndingRun& run, int n, int loop_at,
                            const std::function<std::string(const std::string&)>& last_lines) {
  for (int k = 1; k <= n; ++k) {
    const double t0 = run.now + 1000 * k;
    SlurmJob t = array_task_of(run, k);
    run.slurm.jobs = {t, queued_after_of(run, k)};
    write_file(t.std_out, "resumed at step 40\n");
    auto r = run.cycle(t0);
    EXPECT_EQ(any_finding(r, "crash-loop"), k == loop_at) << "task 5_" << k << "\n"
                                                          << event_lines(*run.store);
    if (k == loop_at) return;
    write_file(t.std_out, steps(41, 45), true);
    run.cycle(t0 + 10);
    write_file(t.std_out, steps(46, 50) + last_lines(std::to_string(t.job_id)), true);
  }
}

// The same array, its tasks killed by the host's OOM killer: nothing but slurmstepd's line says
// so, and no post-mortem is made for a task the next one replaced. Its last lines are its
// verdict. Before, only a crash signature counted, and the array went on through all its tasks.
TEST(StepLoop, AnArrayKilledForMemoryAtTheSameStepEveryTimeIsHeld) {
  EndingRun run;
  array_stops_at_step_50(run, 4, 4, [](const std::string& id) {
    return "slurmstepd: error: Detected 1 oom_kill event in StepId=" + id +
           ".batch. Some of the step tasks have been OOM Killed.\n";
  });
  EXPECT_EQ(run.slurm.controls, std::vector<std::string>{"hold 5_[5-8]"})
      << event_lines(*run.store);
}

// An array whose tasks each reach the time limit where a SIGTERM traceback is printed: its
// last lines say Slurm ended it, no failure, whatever the traceback (torchrun prints one).
TEST(StepLoop, AnArrayEndedByItsTimeLimitIsNoLoop) {
  EndingRun run;
  array_stops_at_step_50(run, 4, 0, [](const std::string& id) {
    return "slurmstepd: error: *** JOB " + id +
           " ON node-1 CANCELLED AT 2027-01-15T10:00:00 DUE TO TIME LIMIT ***\n"
           "Traceback (most recent call last):\n"
           "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got "
           "signal: 15\n";
  });
  EXPECT_TRUE(run.slurm.controls.empty()) << event_lines(*run.store);
}

// The same in an array whose next task starts as llmwatch cancels a hung one: the cancelled
// tasks are found ended only as their next runs, and count as failed ends (llmwatch's cancel is
// in the journal); the third hang holds the rest before its cancel.
TEST(StepLoop, AnArrayThatHangsAtTheSameStepEveryTimeIsHeldBeforeTheThirdCancel) {
  EndingRun run("confirm_hang = \"0s\"\nstale_after = \"60s\"\n");
  for (int k = 1; k <= 3; ++k) {
    const double t0 = run.now + 1000 * k;
    SlurmJob t = array_task_of(run, k);
    run.slurm.jobs = {t, queued_after_of(run, k)};
    write_file(t.std_out, steps(41, 45));
    run.cycle(t0);
    write_file(t.std_out, steps(46, 50), true);
    const Finding* hang = nullptr;
    CycleResult r;
    for (double at = t0 + 10; !hang && at < t0 + 400; at += 30) {
      r = run.cycle(at);
      hang = run.finding(r, "hung");
    }
    ASSERT_TRUE(hang) << "task 5_" << k << "\n" << event_lines(*run.store);
    EXPECT_EQ(hang->cause, k == 3 ? kStepLoop : "") << hang->summary;
    EXPECT_EQ(run.slurm.cancelled.size(), static_cast<size_t>(k)) << event_lines(*run.store);
  }
  EXPECT_EQ(run.slurm.controls, std::vector<std::string>{"hold 5_[4-8]"})
      << event_lines(*run.store);
}

// An array of sweep runs, each trained to the same last step and ended well: the same step
// every time, and no loop (it was one before the ends were told apart: the sweep was held).
TEST(StepLoop, AnArrayOfRunsThatEndWellAtTheSameStepIsNoLoop) {
  EndingRun run;
  array_stops_at_step_50(run, 5, 0, [](const std::string&) { return "reached max_steps=50\n"; });
  EXPECT_TRUE(run.slurm.controls.empty()) << event_lines(*run.store);
}

}  // namespace
}  // namespace llmwatch
