// ProgressUpdate: a log read through a small buffer hands its lines on in batches; fed batch by
// batch, the progress must end as if the read had been applied whole.
#include "rules/job_progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/training_log.h"

namespace llmwatch {
namespace {

JobProgress warmed_up() {
  JobProgress p;
  p.task = "7";
  p.step = 90;
  p.advances = 10;  // past the warm-up: the step interval counts
  p.last_progress = 1000;
  return p;
}

TEST(ProgressUpdate, FedInBatchesEndsAsAppliedWhole) {
  std::vector<std::string> text;
  for (int step = 91; step <= 130; ++step)
    text.push_back("reduced_train_loss: 2.3 | global_step: " + std::to_string(step) +
                   " | train_step_timing in s: 0.5");
  text.push_back("Saving checkpoint to /ckpt/step-130");
  text.push_back("RuntimeError: CUDA error: an illegal memory access was encountered");
  std::vector<std::string_view> lines(text.begin(), text.end());
  TrainingLogParser parser;

  JobProgress whole = warmed_up();
  auto whole_advances = apply_lines(whole, lines, parser, 1030);

  for (size_t cut : {size_t{1}, size_t{7}, size_t{20}, lines.size() - 1}) {
    JobProgress fed = warmed_up();
    ProgressUpdate update(fed, parser, 1030);
    update.feed(std::span(lines).first(cut));
    update.feed(std::span(lines).subspan(cut));
    EXPECT_EQ(update.finish(), whole_advances) << "cut at " << cut;
    EXPECT_EQ(fed.to_json(), whole.to_json()) << "cut at " << cut;
  }
  // The step interval is the read's time over all the steps it covered (30 s / 40 steps),
  // not one batch's.
  EXPECT_DOUBLE_EQ(whole.longest_interval, 0.75);
}

// The step-time and loss series hold the last 64 values however many steps one read covers
// (during a read they may grow past it and are trimmed once, at finish).
TEST(ProgressUpdate, TheSeriesKeepExactlyTheLastValues) {
  std::vector<std::string> text;
  for (int step = 1; step <= 300; ++step)
    text.push_back("reduced_train_loss: " + std::to_string(step) + " | global_step: " +
                   std::to_string(step) + " | train_step_timing in s: " + std::to_string(step));
  std::vector<std::string_view> lines(text.begin(), text.end());
  TrainingLogParser parser;
  JobProgress p;
  p.task = "7";
  ProgressUpdate update(p, parser, 1000);
  update.feed(std::span(lines).first(150));
  update.feed(std::span(lines).subspan(150));
  update.finish();
  ASSERT_EQ(p.step_times.size(), 64u);
  EXPECT_DOUBLE_EQ(p.step_times.front(), 237);
  EXPECT_DOUBLE_EQ(p.step_times.back(), 300);
  ASSERT_EQ(p.losses.size(), 64u);
  EXPECT_DOUBLE_EQ(p.losses.back(), 300);
  EXPECT_EQ(p.recent.size(), 6u);
  EXPECT_EQ(p.recent.back(), text.back());
}

// The hot part leaves out what is at its default (it is rewritten for every job every cycle):
// a fresh progress writes nothing, and every field read back is what was written.
TEST(JobProgressJson, DefaultsAreLeftOutAndReadBackTheSame) {
  JobProgress fresh;
  EXPECT_EQ(fresh.hot_json(), "{}");
  EXPECT_EQ(JobProgress::from_json(fresh.to_json()).to_json(), fresh.to_json());
  EXPECT_EQ(JobProgress::from_json("{}").best_step, -1);

  JobProgress p = warmed_up();
  p.best_step = 0;  // a value that is some other field's default is still written
  p.crash = "xid";
  p.nan_loss = true;
  p.consumed_samples = 0;
  p.cursors["/l"] = {1, 2, 3};
  p.step_times = {1.5, 2.5};
  p.interval_peaks = {{900, 40}, {1500, 10}};
  std::string whole = p.to_json();
  JobProgress back = JobProgress::from_json(whole);
  EXPECT_EQ(back.to_json(), whole);
  EXPECT_EQ(back.best_step, 0);
  EXPECT_EQ(back.consumed_samples, 0.0);
  EXPECT_TRUE(back.nan_loss);
  EXPECT_EQ(back.cursors["/l"].offset, 3u);
  EXPECT_EQ(back.interval_peaks, p.interval_peaks);
  shift_times(back, 100);  // a clock jump moves when each stretch began
  EXPECT_DOUBLE_EQ(back.interval_peaks.front().first, 1000);
}

// A hang that cleared by itself is not a step interval (#27: its gap was learned, and the
// allowance jumped from 12s to 1m27s). A gap longer than the allowance in force before the
// read teaches nothing; a healthy one still does. The allowance says how it was made.
TEST(ProgressUpdate, AHangGapNeverTeachesTheAllowance) {
  JobSettings job;
  job.stale_factor = 5;
  job.stale_floor = Seconds(10);
  job.stale_ceiling = Seconds(3600);
  TrainingLogParser parser;
  JobProgress p = warmed_up();
  p.longest_interval = 5;
  auto before = evaluate_stale(p, job, 1000);
  EXPECT_DOUBLE_EQ(before.allowance, 25);
  EXPECT_EQ(before.how, "5 x 5s longest step interval (floor 10s)");
  std::vector<std::string> one = {"global_step: 91"};
  ProgressUpdate after_hang(p, parser, 1090, before.allowance);  // 90 s without a step
  after_hang.feed(std::vector<std::string_view>(one.begin(), one.end()));
  after_hang.finish();
  EXPECT_DOUBLE_EQ(p.longest_interval, 5) << "the hang's gap was learned";
  EXPECT_EQ(evaluate_stale(p, job, 1090).allowance, 25);
  // A healthy, slower step within the allowance is learned.
  std::vector<std::string> next = {"global_step: 92"};
  ProgressUpdate healthy(p, parser, 1110, evaluate_stale(p, job, 1090).allowance);
  healthy.feed(std::vector<std::string_view>(next.begin(), next.end()));
  healthy.finish();
  EXPECT_DOUBLE_EQ(p.longest_interval, 20);
  EXPECT_EQ(evaluate_stale(p, job, 1110).how, "5 x 20s longest step interval (floor 10s)");
  job.stale_floor = Seconds(600);
  EXPECT_EQ(evaluate_stale(p, job, 1110).how, "stale_floor; 5 x 20s longest step interval is less");
}

// #30: a learned step interval counts for stale_memory. One healthy 40 s hiccup made every later
// hang of the task wait 4 x 40 s (160 s two hours on, where the floor is 45 s); a gap learned
// within the last hour still counts, and nothing is forgotten while the run is silent.
TEST(LearnInterval, AHiccupCountsForStaleMemoryThenIsForgotten) {
  JobSettings job;  // the defaults: factor 4, floor 45 s, memory 1 h
  const double memory = static_cast<double>(job.stale_memory.count());
  ASSERT_EQ(memory, 3600);
  JobProgress p = warmed_up();
  learn_interval(p, 10, 500, memory);
  learn_interval(p, 40, 600, memory);  // the hiccup
  double t = 600;
  for (; t < 600 + memory; t += 30) learn_interval(p, 10, t, memory);
  EXPECT_DOUBLE_EQ(p.longest_interval, 40) << "forgotten within the hour, at " << t;
  // A hang now, past the hour with no new step: the allowance stays as it was.
  p.last_progress = t;
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, t + 7200).allowance, 160);
  // Steps again: once every interval of the hiccup's stretch is older than the hour, the 10 s
  // steps are what counts, and the floor.
  for (; t < 600 + memory + memory / JobProgress::kIntervalStretches + 30; t += 30)
    learn_interval(p, 10, t, memory);
  EXPECT_DOUBLE_EQ(p.longest_interval, 10);
  p.last_progress = t;
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, t).allowance, 45);
  EXPECT_LE(p.interval_peaks.size(), JobProgress::kMaxIntervalPeaks);
  // A gap that comes back within the hour stays learned.
  learn_interval(p, 30, t, memory);
  for (double until = t + memory - 60; t < until; t += 30) learn_interval(p, 10, t, memory);
  EXPECT_DOUBLE_EQ(p.longest_interval, 30);
}

// stale_memory = "0s" keeps the longest of the whole task, as before; an interval learned before
// the stretches were kept (an older state) counts from the next one learned.
TEST(LearnInterval, NoMemoryKeepsTheLongestAndAnOldStateCountsFromNow) {
  JobProgress ever = warmed_up();
  learn_interval(ever, 40, 600, 0);
  for (double t = 630; t < 100000; t += 30) learn_interval(ever, 10, t, 0);
  EXPECT_DOUBLE_EQ(ever.longest_interval, 40);
  EXPECT_TRUE(ever.interval_peaks.empty());

  JobProgress old = warmed_up();
  old.longest_interval = 40;  // read from a state without stretches
  learn_interval(old, 10, 50000, 3600);
  EXPECT_DOUBLE_EQ(old.longest_interval, 40);
  learn_interval(old, 10, 50000 + 3599, 3600);
  EXPECT_DOUBLE_EQ(old.longest_interval, 40);
  learn_interval(old, 10, 50000 + 3600 + 600, 3600);
  EXPECT_DOUBLE_EQ(old.longest_interval, 10);
}

// Python prints the traceback's header first and the exception last: an NCCL error ending a
// traceback is an NCCL error, not a generic traceback (the crash was charged to no node and the
// peers kept the full hang allowance). A fatal error after a handled traceback the run stepped
// past is a new crash; another handled traceback is not.
TEST(ProgressUpdate, TheCrashIsNamedByTheExceptionNotTheTracebacksHeader) {
  TrainingLogParser parser;
  auto feed = [&](JobProgress& p, std::vector<std::string> lines) {
    ProgressUpdate u(p, parser, 2000);
    u.feed(std::vector<std::string_view>(lines.begin(), lines.end()));
    u.finish();
  };
  JobProgress p = warmed_up();
  feed(p, {"Traceback (most recent call last):", "  File \"train.py\", line 9, in <module>",
           "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
           "process exited or there was a network error"});
  EXPECT_EQ(p.crash, "nccl-error");
  EXPECT_FALSE(p.trained_past_crash());
  feed(p, {"Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory"});
  EXPECT_EQ(p.crash, "nccl-error") << "the first specific name stays";

  JobProgress handled = warmed_up();
  feed(handled, {"Traceback (most recent call last):", "requests.exceptions.ReadTimeout",
                 "global_step: 91"});
  EXPECT_EQ(handled.crash, "python-traceback");
  EXPECT_TRUE(handled.trained_past_crash());
  feed(handled, {"Traceback (most recent call last):", "global_step: 92"});
  EXPECT_EQ(handled.crash, "python-traceback");
  EXPECT_TRUE(handled.trained_past_crash()) << "a second handled retry is no crash";
  feed(handled, {"RuntimeError: CUDA error: an illegal memory access was encountered"});
  EXPECT_EQ(handled.crash, "cuda-error");
  EXPECT_FALSE(handled.trained_past_crash()) << "a fatal error after it is a new crash";
}

// slurmstepd's line that Slurm ends the task (a scancel, a time limit, a preemption): the SIGTERM
// tracebacks its processes print after it are the end's, not a crash; a crash printed before it
// is the run's own and stays as its evidence. A STEP's line (srun ending a step after one of its
// tasks failed) is no such line. A task still running long after the line was not ended by it:
// a crash it prints then is a crash again.
TEST(ProgressUpdate, WhatATaskPrintsOnceSlurmSaidItEndsItIsNoCrash) {
  TrainingLogParser parser;
  auto feed = [&](JobProgress& p, std::vector<std::string> lines, double now) {
    ProgressUpdate u(p, parser, now);
    u.feed(std::vector<std::string_view>(lines.begin(), lines.end()));
    u.finish();
  };
  const std::string job_line =
      "slurmstepd: error: *** JOB 7 ON node-1 CANCELLED AT 2027-01-15T08:00:00 DUE TO TIME "
      "LIMIT ***";
  const std::vector<std::string> sigterm = {
      "Traceback (most recent call last):",
      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4 got signal: 15"};
  JobProgress p = warmed_up();
  feed(p, {job_line, sigterm[0], sigterm[1]}, 2000);
  EXPECT_EQ(p.crash, "");
  EXPECT_TRUE(p.slurm_ending(2000));
  EXPECT_EQ(JobProgress::from_json(p.to_json()).slurm_ending_read, 2000) << "survives a restart";

  JobProgress crashed = warmed_up();
  feed(crashed,
       {"RuntimeError: CUDA error: an illegal memory access was encountered", job_line, sigterm[0]},
       2000);
  EXPECT_EQ(crashed.crash, "cuda-error");

  JobProgress step = warmed_up();
  feed(step,
       {"slurmstepd: error: *** STEP 7.0 ON node-1 CANCELLED AT 2027-01-15T08:00:00 ***",
        sigterm[0]},
       2000);
  EXPECT_EQ(step.crash, "python-traceback");
  EXPECT_FALSE(step.slurm_ending(2000));

  feed(p, {sigterm[0]}, 2000 + JobProgress::kSlurmEndingHolds);
  EXPECT_FALSE(p.slurm_ending(2000 + JobProgress::kSlurmEndingHolds));
  EXPECT_EQ(p.crash, "python-traceback");
}

// A rank printed an NCCL error and no step followed: its peers wait in a collective until
// NCCL's own timeout. The run gets two of its longest step intervals (at least 8 s), not the
// 45 s floor (#30: such a task was cancelled ~55 s after its last step). A signature a trainer
// can survive (out of memory, a traceback), a step after the error, and an unlearned interval
// keep the usual allowance, as does a run seen alive after the line (a near miss); a save
// still has its own grace.
TEST(HangRule, AfterAFatalCrashLineTheRunGetsTwoStepIntervals) {
  const JobSettings job;  // the shipped defaults: floor 45 s, factor 4
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 45);
  p.crash = "nccl-error";
  p.crash_advances = p.advances;
  p.crash_seen = 1003;  // read 3 s after the last step
  auto v = evaluate_stale(p, job, 1021);
  EXPECT_DOUBLE_EQ(v.allowance, 20);
  EXPECT_TRUE(v.hung);
  EXPECT_EQ(v.how,
            "2 x 10s longest step interval after a nccl-error line (its other ranks wait in a "
            "collective)");
  EXPECT_FALSE(evaluate_stale(p, job, 1019).hung);
  p.longest_interval = 2;  // fast steps: the floor leaves the task time to end by itself
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, kAfterFatalCrashFloor);
  p.longest_interval = 30;  // slow steps: 2 x 30 s, under the usual 4 x 30 s
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 60);
  p.longest_interval = 10;
  for (const char* survivable : {"cuda-oom", "python-traceback", "xid"}) {
    p.crash = survivable;
    EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 45) << survivable;
  }
  p.crash = "cuda-error";
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 20);
  p.advances = p.crash_advances + 1;  // it stepped on: a handled error
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 45);
  p.advances = p.crash_advances;
  p.checkpoint_since = 1005;  // a save began after the last step: its grace holds
  EXPECT_EQ(evaluate_stale(p, job, 1100).phase, "checkpoint");
  EXPECT_FALSE(evaluate_stale(p, job, 1100).hung);
  p.checkpoint_since = 0;
  // A near miss after the line (stacks seen moving: an elastic trainer rebuilding its
  // communicators) restarted the clock past it: the full allowance again.
  p.last_progress = 1010;
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1040).allowance, 45);
  p.last_progress = 1000;
  p.longest_interval = 0;  // nothing learned: the first steps' grace, as before
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 120);
}

// The run is not hung at `at` - 1 and hung at `at`.
void hung_first_at(const JobProgress& p, const JobSettings& job, double at) {
  EXPECT_FALSE(evaluate_stale(p, job, at - 1).hung) << at - 1;
  EXPECT_TRUE(evaluate_stale(p, job, at).hung) << at;
}

// #30: crash -> new run RUNNING within 15 s. A task whose peers linger after the line was ended
// by this allowance, at least 15 s after the last step, and its confirmation took confirm_hang
// (10 s) more with a Python trainer: 15.3 s with no Python frames, 24.6 s with them. Fast steps
// are now found 8 s after the last one and confirmed a step interval (at least 4 s) later; slow
// steps keep their two intervals and the configured gap.
TEST(HangRule, AfterAFatalCrashLineAFastRunIsFoundAndConfirmedWithinTwelveSeconds) {
  const JobSettings job;  // the shipped defaults: floor 45 s, factor 4, confirm_hang 10 s
  JobProgress p = warmed_up();
  p.longest_interval = 2;
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10) << "no crash: the configured gap";
  p.crash = "cuda-error";
  p.crash_advances = p.advances;
  p.crash_seen = 1001;
  hung_first_at(p, job, 1009);
  EXPECT_EQ(evaluate_stale(p, job, 1009).how,
            "8s (2 x 2s longest step interval is less) after a cuda-error line (its other ranks "
            "wait in a collective)");
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 4);
  p.longest_interval = 6;
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 6);
  p.longest_interval = 30;
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10) << "never longer than confirm_hang";
  JobSettings off = job;
  off.confirm_hang = Seconds(0);
  EXPECT_DOUBLE_EQ(confirm_gap(p, off), 0) << "confirmation off stays off";
  p.longest_interval = 2;
  p.crash = "cuda-oom";  // a trainer may catch it: the full allowance and gap
  EXPECT_FALSE(evaluate_stale(p, job, 1009).hung);
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10);
  p.crash = "nccl-error";
  p.advances = p.crash_advances + 1;  // it stepped on
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10);
  p.advances = p.crash_advances;
  p.last_progress = 1005;  // a near miss after the line: alive, the full gap again
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10);
}

// #30 at slow steps: a lingering task after a sticky CUDA error waited 2 x 10 s and a 10 s
// confirmation, ~30 s from its restart with 10 s steps. No rank can step after such an error, so
// the step interval tells nothing: 8 s after the line was read and a 4 s gap, whatever the steps
// take. Another CUDA error (one a trainer may catch) keeps its two intervals and its gap.
TEST(HangRule, AfterAStickyCudaErrorASlowRunIsFoundAndConfirmedWithinTwelveSeconds) {
  const JobSettings job;  // the shipped defaults: floor 45 s, factor 4, confirm_hang 10 s
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  p.crash = "cuda-error";
  p.crash_advances = p.advances;
  p.crash_seen = 1006;  // late in a 10 s step
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 20);
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10);
  p.crash_sticky = true;
  hung_first_at(p, job, 1015);  // 8 s from the line, not from the step
  p.crash_seen = 1001;          // early in the step: 8 s from the line all the same
  hung_first_at(p, job, 1010);
  EXPECT_EQ(evaluate_stale(p, job, 1010).how,
            "8s after a cuda-error line its process cannot go on from (its other ranks wait in a "
            "collective), whatever its step interval (no rank steps again)");
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 4);
  p.crash_seen = 1015;  // read late (a slow file system): never later than two intervals
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 20);
  p.crash_seen = 1001;
  p.advances = p.crash_advances + 1;  // it stepped on after all: the full allowance and gap
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 45);
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10);
  p.advances = p.crash_advances;
  p.last_progress = 1005;  // a near miss after the line (stacks moved): alive, the full gap
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 10);
}

// #30 at slow steps, after an NCCL error raised to Python (a DistBackendError traceback, which a
// trainer may catch): nothing in the log says the rank's process ended, so the run waited two
// 10 s intervals and a 10 s confirmation (~20-30 s to its restart). Its rank is now looked for 8 s
// after the line, once; seen gone, the line is one no rank goes on from: 8 s from it and a 4 s
// gap, said as such. Seen running, or not seen at all, nothing changes.
TEST(HangRule, AFatalLineWhoseRankHasEndedIsOneNoRankGoesOnFrom) {
  const JobSettings job;  // the shipped defaults: floor 45 s, factor 4, confirm_hang 10 s
  TrainingLogParser parser;
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  apply_lines(p,
              std::vector<std::string>{
                  "[rank5]: Traceback (most recent call last):",
                  "[rank5]: torch.distributed.DistBackendError: NCCL error in: "
                  "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error"},
              parser, 1003);
  EXPECT_EQ(p.crash, "nccl-error");
  EXPECT_EQ(p.crash_rank, 5);
  EXPECT_FALSE(p.crash_by_task);
  EXPECT_DOUBLE_EQ(rank_look_due(p), 1003 + kRankFirstLook);
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 20);
  // Looked, and the rank ran (a teardown of some seconds, or it caught the error): once more 8 s
  // after the line; a first look that came late, at least 2 s after it.
  p.crash_rank_looked = 1007;
  EXPECT_DOUBLE_EQ(rank_look_due(p), 1003 + kAfterFatalCrashFloor);
  p.crash_rank_looked = 1010;
  EXPECT_DOUBLE_EQ(rank_look_due(p), 1012);
  // Looked twice, and the rank runs on: no third look, the two intervals hold.
  p.crash_rank_looked = 1011;
  EXPECT_DOUBLE_EQ(rank_look_due(p), 0);
  EXPECT_FALSE(evaluate_stale(p, job, 1015).hung);
  // Looked, and its process has ended (or is exiting): hung 8 s after the line, confirmed 4 s
  // later.
  p.crash_sticky = p.crash_rank_ended = true;
  hung_first_at(p, job, 1012);  // over 8 s after the line's write at 1003
  EXPECT_EQ(evaluate_stale(p, job, 1012).how,
            "8s after a nccl-error line whose rank's process has since ended or is exiting (its "
            "other ranks wait in a collective), whatever its step interval (no rank steps again)");
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 4);
  // Kept across a restart of llmwatch.
  auto back = JobProgress::from_json(p.to_json());
  EXPECT_EQ(back.crash_rank, 5);
  EXPECT_DOUBLE_EQ(back.crash_rank_looked, 1011);
  EXPECT_TRUE(back.crash_rank_ended);
  // A new crash after the run trained past this one is looked for afresh.
  apply_lines(p, std::vector<std::string>{"global_step: 101", "global_step: 102"}, parser, 1020);
  apply_lines(p, std::vector<std::string>{"3: torch.distributed.DistBackendError: NCCL error"},
              parser, 1031);
  EXPECT_EQ(p.crash_rank, 3);
  EXPECT_TRUE(p.crash_by_task);
  EXPECT_FALSE(p.crash_rank_ended);
  EXPECT_FALSE(p.crash_sticky);
  EXPECT_DOUBLE_EQ(rank_look_due(p), 1031 + kRankFirstLook);
}

// The look is only where it can shorten the wait: not after a line no rank goes on from (it has
// its 8 s), not at fast steps (two intervals are 8 s or less), not after a survivable crash or a
// step past it.
TEST(HangRule, TheRankIsLookedForOnlyWhereTwoIntervalsAreLongerThanTheFloor) {
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  p.crash = "nccl-error";
  p.crash_advances = p.advances;
  p.crash_seen = 1003;
  EXPECT_GT(rank_look_due(p), 0);
  p.crash_sticky = true;
  EXPECT_DOUBLE_EQ(rank_look_due(p), 0);
  p.crash_sticky = false;
  p.longest_interval = 4;
  EXPECT_DOUBLE_EQ(rank_look_due(p), 0);
  p.longest_interval = 10;
  p.crash = "cuda-oom";
  EXPECT_DOUBLE_EQ(rank_look_due(p), 0);
  p.crash = "nccl-error";
  p.advances = p.crash_advances + 1;
  EXPECT_DOUBLE_EQ(rank_look_due(p), 0);
}

// The sticky mark follows the crash it belongs to: a sticky line of the crash held marks it, a
// new crash the run trained past replaces it, and it is kept across a restart of llmwatch.
TEST(HangRule, TheStickyMarkFollowsTheCrashItBelongsTo) {
  TrainingLogParser parser;
  JobProgress p = warmed_up();
  apply_lines(p, std::vector<std::string>{"RuntimeError: CUDA error: invalid argument"}, parser,
              1001);
  EXPECT_EQ(p.crash, "cuda-error");
  EXPECT_FALSE(p.crash_sticky);
  apply_lines(p, std::vector<std::string>{"CUDA error: an illegal memory access was encountered"},
              parser, 1002);
  EXPECT_TRUE(p.crash_sticky);
  EXPECT_TRUE(JobProgress::from_json(p.to_json()).crash_sticky);
  // An NCCL error after it names no better crash: the held one, still sticky.
  apply_lines(p, std::vector<std::string>{"torch.distributed.DistBackendError: NCCL error"}, parser,
              1003);
  EXPECT_EQ(p.crash, "cuda-error");
  EXPECT_TRUE(p.crash_sticky);
  // The run steps past it (it was caught after all), then an NCCL error: a new crash, not sticky.
  apply_lines(p, std::vector<std::string>{"global_step: 101", "global_step: 102"}, parser, 1010);
  apply_lines(p, std::vector<std::string>{"torch.distributed.DistBackendError: NCCL error"}, parser,
              1011);
  EXPECT_EQ(p.crash, "nccl-error");
  EXPECT_FALSE(p.crash_sticky);
}

// #30 at slow steps, after an NCCL error: PyTorch's watchdog takes the process down on a failed
// or timed-out collective (its default async error handling), and a task whose abort hangs
// lingered 2 x 10 s and a 10 s confirmation, as after an NCCL error a trainer may catch. Its
// teardown words mark the crash held as one no rank goes on from, in the orders PyTorch prints
// them: the timeout first (1.x), the teardown first (2.4), std::terminate's last.
TEST(HangRule, NcclsWatchdogTakingTheProcessDownIsACrashNoRankGoesOnFrom) {
  TrainingLogParser parser;
  const JobSettings job;  // the shipped defaults
  const std::string teardown =
      "[rank5]:[E1130 ProcessGroupNCCL.cpp:698] [Rank 5] To avoid data inconsistency, we are "
      "taking the entire process down.";
  const std::string timeout =
      "[rank5]:[E1130 ProcessGroupNCCL.cpp:563] [Rank 5] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 ms";
  const std::string terminate =
      "terminate called after throwing an instance of 'std::runtime_error'";
  {
    JobProgress p = warmed_up();
    p.longest_interval = 10;
    apply_lines(p, std::vector<std::string>{timeout}, parser, 1006);
    EXPECT_EQ(p.crash, "nccl-timeout");
    EXPECT_FALSE(p.crash_sticky);
    EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 20);
    apply_lines(p, std::vector<std::string>{teardown, terminate}, parser, 1007);
    EXPECT_EQ(p.crash, "nccl-timeout");  // the cause the run printed first stays its name
    EXPECT_TRUE(p.crash_sticky);
    hung_first_at(p, job, 1015);  // 8 s from the timeout's read, not 2 intervals from the step
    EXPECT_DOUBLE_EQ(confirm_gap(p, job), 4);
  }
  {
    JobProgress p = warmed_up();
    p.longest_interval = 10;
    apply_lines(p,
                std::vector<std::string>{
                    "[Rank 5] Some NCCL operations have failed or timed out. Due to the "
                    "asynchronous nature of CUDA kernels, subsequent GPU operations might run "
                    "on corrupted/incomplete data.",
                    teardown,
                    "[PG ID 0 PG GUID 0(default_pg) Rank 5] Process group watchdog thread "
                    "terminated with exception: NCCL error: remote process exited or there was a "
                    "network error, NCCL version 2.21.5"},
                parser, 1002);
    EXPECT_EQ(p.crash, "nccl-error");
    EXPECT_TRUE(p.crash_sticky);
    hung_first_at(p, job, 1011);
  }
  {
    // std::terminate after an error a trainer may catch, or after none: the held crash only.
    JobProgress p = warmed_up();
    apply_lines(p, std::vector<std::string>{terminate}, parser, 1002);
    EXPECT_EQ(p.crash, "");
    EXPECT_FALSE(p.crash_sticky);
    apply_lines(p,
                std::vector<std::string>{"torch.OutOfMemoryError: CUDA out of memory", terminate},
                parser, 1003);
    EXPECT_EQ(p.crash, "cuda-oom");
    EXPECT_FALSE(p.crash_sticky);
  }
  {
    // A DistBackendError raised to Python is not a teardown: an elastic trainer may catch it.
    JobProgress p = warmed_up();
    apply_lines(p,
                std::vector<std::string>{"torch.distributed.DistBackendError: NCCL error in: "
                                         "ProcessGroupNCCL.cpp:1970, unhandled system error"},
                parser, 1002);
    EXPECT_EQ(p.crash, "nccl-error");
    EXPECT_FALSE(p.crash_sticky);
    // It was caught: the run steps on, and a later teardown line is a new crash of its own.
    apply_lines(p, std::vector<std::string>{"global_step: 101", "global_step: 102"}, parser, 1010);
    apply_lines(p, std::vector<std::string>{terminate}, parser, 1011);
    EXPECT_FALSE(p.crash_sticky);
    apply_lines(p, std::vector<std::string>{teardown}, parser, 1012);
    EXPECT_EQ(p.crash, "nccl-error");
    EXPECT_TRUE(p.crash_sticky);
    EXPECT_EQ(p.crash_seen, 1012);
  }
}

// #30 at slow steps, after an NCCL error raised to Python: a rank launched by srun whose
// DistBackendError went uncaught exits, and srun says so at once ("task 5: Exited with exit
// code 1") while its peers linger in the collective. That rank is gone: 8 s from the line, not
// two intervals. Without srun's line (a trainer that caught the error) the two intervals stay.
TEST(HangRule, SrunsWordThatTheRankExitedEndsTheWaitAfterItsNcclError) {
  TrainingLogParser parser;
  const JobSettings job;
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  apply_lines(p,
              std::vector<std::string>{"[rank5]: Traceback (most recent call last):",
                                       "[rank5]: torch.distributed.DistBackendError: NCCL error "
                                       "in: ProcessGroupNCCL.cpp:1970, unhandled system error"},
              parser, 1003);
  EXPECT_EQ(p.crash, "nccl-error");
  EXPECT_FALSE(p.crash_sticky);
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1000).allowance, 20);
  apply_lines(p, std::vector<std::string>{"srun: error: node-3: task 5: Exited with exit code 1"},
              parser, 1004);
  EXPECT_EQ(p.crash, "nccl-error");
  EXPECT_TRUE(p.crash_sticky);
  hung_first_at(p, job, 1012);  // 8 s from the error's line (read at 1003)
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), 4);
}

// An NCCL error raised to Python on rank 5, and torchrun's word that its worker failed.
constexpr const char* kRaisedNcclError =
    "[rank5]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
    "unhandled system error";
constexpr const char* kTorchrunWorkerFailed =
    "E1202 03:10:14.512000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 5 (pid: 4242) of binary: /usr/bin/python3";

// #30: the same under torchrun, whose elastic agent says a worker failed as it sees the exit
// ("failed (exitcode: 1) local_rank: 5 ...") and then stops the node's other workers.
TEST(HangRule, TorchrunsWordThatAWorkerFailedEndsTheWaitAfterItsNcclError) {
  TrainingLogParser parser;
  const JobSettings job;
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  apply_lines(p, std::vector<std::string>{kRaisedNcclError, kTorchrunWorkerFailed}, parser, 1003);
  EXPECT_EQ(p.crash, "nccl-error");
  EXPECT_TRUE(p.crash_sticky);
  hung_first_at(p, job, 1012);  // past 8 s from the lines (read at 1003), not 2 intervals
}

// #30: torchrun (or ft_launcher) with --max-restarts restarts its worker group after that
// failure: the new workers rendezvous and load the checkpoint, as at the run's start. They get
// the startup grace from the restart's line, not a crash's 8 s (which cancelled a run its
// launcher was restarting), and with it the configured confirmation gap; their first step ends
// it. The restart's time is kept across a restart of llmwatch, and a clock jump moves it.
TEST(HangRule, ALaunchersRestartOfItsWorkersGetsTheStartupGraceFromItsLine) {
  TrainingLogParser parser;
  JobSettings job;
  job.startup_grace = Seconds(600);
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  apply_lines(p,
              std::vector<std::string>{
                  kRaisedNcclError, kTorchrunWorkerFailed,
                  "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. "
                  "3/3 attempts left; will restart worker group"},
              parser, 1004, 1003);
  EXPECT_DOUBLE_EQ(p.restart_since, 1003);  // its write
  EXPECT_FALSE(waits_after_fatal_crash(p));
  EXPECT_DOUBLE_EQ(confirm_gap(p, job), static_cast<double>(job.confirm_hang.count()));
  StaleVerdict v = evaluate_stale(p, job, 1100);
  EXPECT_EQ(v.phase, "restart");
  EXPECT_NE(v.how.find("restart of its workers"), std::string::npos) << v.how;
  hung_first_at(p, job, 1604);  // 600 s after the restart's line, not 8 s after the crash's
  JobProgress kept = JobProgress::from_json(p.to_json());
  EXPECT_DOUBLE_EQ(kept.restart_since, 1003);
  shift_times(kept, 100);
  EXPECT_DOUBLE_EQ(kept.restart_since, 1103);
  // The new workers resume from the checkpoint of step 80: the restart is over.
  apply_lines(p, std::vector<std::string>{"Training epoch 0, iteration 80/99999 | global_step: 80"},
              parser, 1300);
  EXPECT_DOUBLE_EQ(p.restart_since, 0);
  EXPECT_EQ(evaluate_stale(p, job, 1301).phase, "training");
}

// #30: the 8 s after a line no process goes on from counted from the read that saw it, which the
// daemon's sampler makes up to 5 s after the write: a task lingering after such a line at 10 s
// steps was restarted 13 s after it. They count from the line's write now (the read's mtime:
// at or after the line, as heartbeats after it only move it on), and from the read where the
// mtime cannot be true; both are kept across a restart of llmwatch, and a clock jump moves both.
TEST(HangRule, TheEightSecondsAfterAFatalLineCountFromItsWrite) {
  TrainingLogParser parser;
  const JobSettings job;
  const std::vector<std::string> lines{
      "RuntimeError: CUDA error: an illegal memory access was "
      "encountered"};
  JobProgress p = warmed_up();
  p.longest_interval = 10;
  apply_lines(p, lines, parser, 1010, 1006);  // written 6 s after the step, read 4 s later
  EXPECT_DOUBLE_EQ(p.crash_seen, 1010);       // still this read's: "seen in this read"
  EXPECT_DOUBLE_EQ(p.crash_written, 1006);
  hung_first_at(p, job, 1015);  // 8 s from the write (it was 1019: 8 s from the read)
  JobProgress kept = JobProgress::from_json(p.to_json());
  EXPECT_DOUBLE_EQ(kept.crash_written, 1006);
  shift_times(kept, 100);
  EXPECT_DOUBLE_EQ(kept.crash_written, 1106);
  hung_first_at(kept, job, 1115);
  JobProgress unknown = warmed_up();
  unknown.longest_interval = 10;
  apply_lines(unknown, lines, parser, 1010, 1011);  // an mtime after the read: not true
  EXPECT_DOUBLE_EQ(unknown.crash_written, 1010);
  hung_first_at(unknown, job, 1019);
}

// Over random runs (any crash signature or none, stepped past or not, a near miss or not, any
// step interval and confirm_hang): the gap between a hang's two dumps is never longer than
// confirm_hang, never 0 unless confirmation is off, shorter only while the run waits after a
// fatal line and then at least a step interval or 4 s; and such a line never lengthens the
// allowance nor brings it under two step intervals or 8 s.
TEST(HangRule, TheConfirmationGapAndAllowanceAfterAFatalLineHoldOverRandomRuns) {
  std::mt19937 rng(30);
  const char* crashes[] = {"",         "nccl-error",       "nccl-timeout", "cuda-error",
                           "cuda-oom", "python-traceback", "xid"};
  std::uniform_int_distribution<int> pick(0, 6), coin(0, 1), confirm(0, 30);
  std::uniform_real_distribution<double> interval(0, 120), ago(0, 20);
  for (int i = 0; i < 20000; ++i) {
    JobSettings job;
    job.confirm_hang = Seconds(confirm(rng));
    JobProgress p = warmed_up();
    p.longest_interval = coin(rng) ? interval(rng) : 0;
    p.crash = crashes[pick(rng)];
    p.crash_sticky = fatal_crash_signature(p.crash) && coin(rng);
    p.crash_advances = p.advances - coin(rng);
    p.crash_seen = p.last_progress + (coin(rng) ? ago(rng) : -ago(rng));
    p.crash_written = coin(rng) ? p.crash_seen - ago(rng) : 0;  // its write, where known
    const double gap = confirm_gap(p, job), configured = job.confirm_hang.count();
    ASSERT_LE(gap, configured);
    ASSERT_EQ(gap == 0, configured == 0);
    if (gap < configured) {
      ASSERT_TRUE(waits_after_fatal_crash(p)) << p.crash;
      ASSERT_GE(gap, std::min(configured, kAfterFatalCrashConfirmFloor));
      if (!p.crash_sticky) {
        ASSERT_GE(gap, std::min(configured, p.longest_interval));
      }
    }
    JobProgress quiet = p;
    quiet.crash.clear();
    const double now = p.last_progress + ago(rng);
    const double with = evaluate_stale(p, job, now).allowance;
    const double without = evaluate_stale(quiet, job, now).allowance;
    ASSERT_LE(with, without);
    const double twice = p.crash_sticky ? 0 : 2 * p.longest_interval;
    ASSERT_GE(with, std::min(without, std::max(kAfterFatalCrashFloor, twice)));
  }
}

}  // namespace
}  // namespace llmwatch
