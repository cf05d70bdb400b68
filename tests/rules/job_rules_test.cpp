#include "rules/job_rules.h"

#include <gtest/gtest.h>

#include <limits>

#include "finding_kinds.h"
#include "policy/policy.h"

namespace llmwatch {
namespace {

SlurmJob job(std::int64_t id, const std::string& state, const std::string& reason = "None") {
  SlurmJob j;
  j.job_id = id;
  j.name = "tr11";
  j.user = "alice";
  j.state = state;
  j.reason = reason;
  j.nodes = state == "RUNNING" ? "node-[1-2]" : "";
  return j;
}

JobSettings settings() {
  JobSettings s;
  s.name = "tr11";
  s.stale_floor = Seconds(60);
  s.stale_ceiling = Seconds(3600);
  s.stale_factor = 5;
  s.startup_grace = Seconds(600);
  s.checkpoint_grace = Seconds(900);
  return s;
}

using testing::kinds;

TEST(SelectJobs, ByNameUserAndNeverLlmwatchItself) {
  auto a = job(1, "RUNNING");
  auto other_user = job(2, "RUNNING");
  other_user.user = "bob";
  auto self = job(3, "PENDING");
  self.name = "llmwatch";
  auto done = job(4, "COMPLETED");
  JobSettings s = settings();
  s.user = "alice";
  auto picked = select_jobs({a, other_user, self, done}, s, "llmwatch");
  ASSERT_EQ(picked.size(), 1u);
  EXPECT_EQ(picked[0].job_id, 1);
  // By id: an array's tasks share array_job_id.
  JobSettings by_id;
  by_id.id = 40;
  auto task = job(42, "RUNNING");
  task.array_job_id = 40;
  task.array_task_id = 2;
  EXPECT_EQ(select_jobs({task, a}, by_id, "llmwatch").size(), 1u);
  // A watched job that happens to share llmwatch's name is still never llmwatch's own job.
  JobSettings same_name;
  same_name.name = "llmwatch";
  EXPECT_TRUE(select_jobs({self}, same_name, "llmwatch").empty());
}

TEST(JobRules, NothingQueuedIsAbsent) {
  JobObservation obs;
  auto fs = evaluate_job(settings(), obs, 1000);
  ASSERT_EQ(kinds(fs), std::vector<std::string>{"absent"});
  EXPECT_EQ(fs[0].key, "job:tr11/absent");
  EXPECT_EQ(fs[0].severity, Severity::Critical);
}

// A watched name Slurm never showed is most often a typo (#27: `mytrian` was only "absent").
// The hint names the closest of the job user's queued names, never another user's job or
// llmwatch's own, and nothing when no name is close.
TEST(JobRules, AnAbsentNameHintsAtTheClosestQueuedNameOfItsUser) {
  auto own = job(1, "RUNNING");
  own.name = "mytrain";
  auto theirs = job(2, "RUNNING");
  theirs.name = "mytrian2";
  theirs.user = "bob";
  auto self = job(3, "RUNNING");
  self.name = "mytrin";
  auto far = job(4, "PENDING");
  far.name = "eval-sweep";
  std::vector<SlurmJob> queue = {own, theirs, self, far};
  QueueIndex index(queue);
  EXPECT_EQ(index.similar_name("mytrian", "alice", "mytrin"), "mytrain");
  EXPECT_EQ(index.similar_name("mytrian", "bob", "mytrin"), "mytrian2");
  EXPECT_EQ(index.similar_name("mytrian", "carol", ""), "");
  EXPECT_EQ(index.similar_name("pretrain-70b", "alice", ""), "");
  EXPECT_EQ(index.similar_name("mytrain", "alice", "mytrin"), "");  // its own name is no hint

  JobSettings s = settings();
  s.name = "mytrian";
  JobObservation obs;
  obs.similar_name = "mytrain";
  auto fs = evaluate_job(s, obs, 1000);
  ASSERT_EQ(kinds(fs), std::vector<std::string>{"absent"});
  EXPECT_EQ(fs[0].summary,
            "nothing RUNNING or PENDING for mytrian; Slurm has a job named 'mytrain': is the "
            "[[job]] name misspelled?");
}

// The defect: a SUSPENDED, STOPPED or REQUEUE_HOLD job was dropped by select_jobs, so the
// run looked absent and on_absent = restart would have started a second copy.
TEST(JobRules, SuspendedStoppedOrHeldIsNotAbsent) {
  for (const char* state : {"SUSPENDED", "STOPPED", "REQUEUE_HOLD", "SIGNALING"}) {
    std::vector<SlurmJob> queue = {job(5, state)};
    JobObservation obs;
    obs.entries = select_jobs(queue, settings(), "llmwatch");
    ASSERT_EQ(obs.entries.size(), 1u) << state;
    EXPECT_TRUE(evaluate_job(settings(), obs, 1000).empty()) << state;
  }
  std::vector<SlurmJob> done = {job(6, "COMPLETED")};
  EXPECT_TRUE(select_jobs(done, settings(), "llmwatch").empty());
}

TEST(JobRules, PendingReasonsNormalVersusStuck) {
  JobObservation obs;
  for (const char* normal :
       {"Priority", "Resources", "Dependency", "JobArrayTaskLimit", "BeginTime"}) {
    obs.entries = {job(1, "PENDING", normal)};
    EXPECT_TRUE(evaluate_job(settings(), obs, 1000).empty()) << normal;
  }
  // A failed launch is a finding of its own (rules/launch_failure.h).
  for (const char* stuck :
       {"DependencyNeverSatisfied", "JobHeldAdmin", "JobHeldUser", "BadConstraints"}) {
    obs.entries = {job(1, "PENDING", stuck)};
    EXPECT_EQ(kinds(evaluate_job(settings(), obs, 1000)), std::vector<std::string>{"stuck"})
        << stuck;
  }
}

struct Running {
  JobObservation obs;
  JobProgress progress;
  TrainingLogParser parser;
  Running() {
    obs.entries = {job(1, "RUNNING")};
    obs.running = obs.entries[0];
    start_task(progress, "1", "/log", 0);
    obs.progress = &progress;
  }
  void step(std::int64_t n, double t) {
    apply_lines(progress,
                {"Training epoch 0, iteration " + std::to_string(n) + "/99 | global_step: " +
                 std::to_string(n) + " | reduced_train_loss: 2.0 | train_step_timing in s: 10"},
                parser, t);
  }
  void line(const std::string& text, double t) { apply_lines(progress, {text}, parser, t); }
  std::vector<std::string> at(double now, const JobSettings& s = settings()) {
    return kinds(evaluate_job(s, obs, now));
  }
};

TEST(JobRules, StartupGetsItsOwnGrace) {
  Running r;
  EXPECT_TRUE(r.at(599).empty());
  EXPECT_EQ(r.at(601), std::vector<std::string>{"hung"});
}

TEST(JobRules, AdaptiveThresholdFollowsTheLongestIntervalAfterWarmup) {
  Running r;
  // Warm-up intervals (compilation) are long and must not count.
  r.step(1, 100);
  r.step(2, 400);
  r.step(3, 700);
  for (int i = 4; i <= 10; ++i) r.step(i, 700 + (i - 3) * 20.0);  // 20 s steps
  double last = 700 + 7 * 20.0;
  EXPECT_DOUBLE_EQ(r.progress.longest_interval, 20);
  // 5 x 20 s = 100 s allowed.
  EXPECT_TRUE(r.at(last + 99).empty());
  EXPECT_EQ(r.at(last + 101), std::vector<std::string>{"hung"});
  // The floor holds for fast jobs, the ceiling for slow ones.
  JobSettings s = settings();
  s.stale_floor = Seconds(300);
  EXPECT_TRUE(r.at(last + 299, s).empty());
  s.stale_floor = Seconds(10);
  s.stale_ceiling = Seconds(50);
  EXPECT_EQ(r.at(last + 51, s), std::vector<std::string>{"hung"});
  // A fixed stale_after overrides the adaptive one.
  s.stale_after = Seconds(30);
  EXPECT_EQ(r.at(last + 31, s), std::vector<std::string>{"hung"});
}

TEST(JobRules, HeartbeatLinesAreNotProgress) {
  Running r;
  r.step(1, 100);
  for (int t = 101; t < 2000; t += 10)
    r.line("[rank0] heartbeat: still waiting in ALLREDUCE (step 1)", t);
  EXPECT_EQ(r.at(2000), std::vector<std::string>{"hung"});
  r.step(1, 2001);  // a repeated step is not progress either
  EXPECT_EQ(r.at(2002), std::vector<std::string>{"hung"});
}

TEST(JobRules, CheckpointSaveLongerThanAStepButWithinGraceIsNotAHang) {
  Running r;
  for (int i = 1; i <= 6; ++i) r.step(i, i * 10.0);  // 10 s steps → 60 s floor applies
  r.line("[NeMo I] saving checkpoint at step 6", 61);
  EXPECT_TRUE(
      r.at(61 + 800).empty());  // 800 s save: longer than the 60 s allowance, within 900 s grace
  EXPECT_EQ(r.at(61 + 901), std::vector<std::string>{"hung"});
  r.line("[NeMo I] Global Checkpoint Save : Rank: 0 : Iteration: 6 : Save duration: 850s", 911);
  EXPECT_TRUE(r.at(912).empty());  // the step clock restarts when the save ends
  EXPECT_EQ(r.at(911 + 61), std::vector<std::string>{"hung"});  // but no step after it is a hang
  r.step(7, 920);
  EXPECT_TRUE(r.at(921).empty());
}

TEST(JobRules, CrashSignatureIsAFindingWithEvidence) {
  Running r;
  r.step(1, 10);
  r.line(
      "[rank368]:[E808 04:21:41.160918398 ProcessGroupNCCL.cpp:655] [Rank 368] Watchdog caught "
      "collective "
      "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)",
      11);
  auto fs = evaluate_job(settings(), r.obs, 12);
  ASSERT_EQ(kinds(fs), std::vector<std::string>{"crashed"});
  EXPECT_NE(fs[0].summary.find("nccl-timeout"), std::string::npos);
  ASSERT_FALSE(fs[0].evidence.empty());
  EXPECT_NE(fs[0].evidence.back().find("Watchdog caught"), std::string::npos);
}

TEST(JobRules, UnreadableLogIsUnknownNeverHung) {
  Running r;
  r.obs.log_error = "/log: Permission denied";
  auto fs = evaluate_job(settings(), r.obs, 100000);
  ASSERT_EQ(kinds(fs), std::vector<std::string>{"log-unreadable"});
  EXPECT_EQ(fs[0].severity, Severity::Unknown);
}

TEST(JobProgress, SurvivesARoundTripThroughTheStore) {
  Running r;
  r.step(1, 10);
  r.step(2, 20);
  r.line("saving checkpoint", 21);
  r.progress.cursors["/log"] = {1, 2, 300};
  JobProgress back = JobProgress::from_json(r.progress.to_json());
  EXPECT_EQ(back.task, "1");
  EXPECT_EQ(*back.step, 2);
  EXPECT_EQ(back.best_step, 2);
  EXPECT_DOUBLE_EQ(back.last_progress, 20);
  EXPECT_DOUBLE_EQ(back.checkpoint_since, 21);
  EXPECT_EQ(back.recent.size(), r.progress.recent.size());
  EXPECT_EQ(back.cursors["/log"].offset, 300u);
  // A new task keeps the best step but starts its own phase.
  start_task(back, "2", "/other-log", 30);
  EXPECT_FALSE(back.step);
  EXPECT_EQ(back.best_step, 2);
  EXPECT_TRUE(back.cursors.empty());
}

// Every field comes back as it went in (the writer is hand-made: a field it forgot would
// silently reset a run's state at each cycle).
TEST(JobProgress, EveryFieldRoundTrips) {
  JobProgress p;
  p.task = "7_3";
  p.task_start = 1700000000;
  p.log_path = "/logs/a \"b\".out";
  p.cursors["/logs/x"] = {1, 2, 3};
  p.cursors["/logs/y"] = {4, 5, 6};
  p.task_seen = 1.5;
  p.step = 42;
  p.best_step = 41;
  p.max_steps = 1000;
  p.last_progress = 2.25;
  p.longest_interval = 3.125;
  p.advances = 9;
  p.step_time = 0.3;
  p.loss = 2.7;
  p.checkpoint_since = 4;
  p.checkpoint_done = 5;
  p.evaluation_since = 6;
  p.crash = "CUDA error: \x01";
  p.recent = {"line \r one", "caf\xC3\xA9"};
  p.bytes_read = 123456789012ull;
  p.series_at = 1234.5;
  p.quick_deaths = 2;
  p.counted_task = "7_2";
  p.step_times = {0.1, 0.2};
  p.losses = {3.5, 3.25};
  p.consumed_samples = 512;
  p.global_batch_size = 256;
  p.samples_stalled = 1;
  p.nan_loss = true;
  p.skipped_iterations = 3;
  p.nan_iterations = 4;
  p.counters_rising = true;
  p.save_seconds = 30.5;
  p.load_seconds = 12;
  p.checkpoint_interval = 600;
  p.after_checkpoint = true;
  std::string text = p.to_json();
  JobProgress b = JobProgress::from_json(text);
  EXPECT_EQ(b.to_json(), text);
  EXPECT_EQ(b.task, p.task);
  EXPECT_EQ(b.task_start, p.task_start);
  EXPECT_EQ(b.log_path, p.log_path);
  EXPECT_EQ(b.cursors["/logs/y"].inode, 5u);
  EXPECT_EQ(b.step, p.step);
  EXPECT_EQ(b.best_step, p.best_step);
  EXPECT_EQ(b.max_steps, p.max_steps);
  EXPECT_EQ(b.last_progress, p.last_progress);
  EXPECT_EQ(b.longest_interval, p.longest_interval);
  EXPECT_EQ(b.advances, p.advances);
  EXPECT_EQ(b.step_time, p.step_time);
  EXPECT_EQ(b.loss, p.loss);
  EXPECT_EQ(b.evaluation_since, p.evaluation_since);
  EXPECT_EQ(b.crash, p.crash);
  EXPECT_EQ(b.recent, p.recent);
  EXPECT_EQ(b.bytes_read, p.bytes_read);
  EXPECT_EQ(b.series_at, p.series_at);
  EXPECT_EQ(b.quick_deaths, p.quick_deaths);
  EXPECT_EQ(b.counted_task, p.counted_task);
  EXPECT_EQ(b.step_times, p.step_times);
  EXPECT_EQ(b.losses, p.losses);
  EXPECT_EQ(b.consumed_samples, p.consumed_samples);
  EXPECT_EQ(b.global_batch_size, p.global_batch_size);
  EXPECT_EQ(b.samples_stalled, p.samples_stalled);
  EXPECT_TRUE(b.nan_loss);
  EXPECT_EQ(b.skipped_iterations, p.skipped_iterations);
  EXPECT_EQ(b.nan_iterations, p.nan_iterations);
  EXPECT_TRUE(b.counters_rising);
  EXPECT_EQ(b.save_seconds, p.save_seconds);
  EXPECT_EQ(b.load_seconds, p.load_seconds);
  EXPECT_EQ(b.checkpoint_interval, p.checkpoint_interval);
  EXPECT_TRUE(b.after_checkpoint);
  // A time that is not finite reads back (as 0), never as an error.
  p.last_progress = std::numeric_limits<double>::infinity();
  p.step_time = std::numeric_limits<double>::quiet_NaN();
  JobProgress odd = JobProgress::from_json(p.to_json());
  EXPECT_EQ(odd.task, "7_3");
  EXPECT_EQ(odd.last_progress, 0);
  EXPECT_FALSE(odd.step_time);
}

}  // namespace
}  // namespace llmwatch

namespace llmwatch {
namespace {

TEST(JobRules, TasksDyingBeforeTheirFirstStepAreACrashLoop) {
  JobSettings s = settings();
  s.crash_loop_after = 2;
  JobProgress p;
  start_task(p, "5_1", "/log", 0);
  task_ended(p, false);
  task_ended(p, false);  // the same task is never counted twice
  EXPECT_EQ(p.quick_deaths, 1);
  start_task(p, "5_2", "/log", 10);
  task_ended(p, false);
  EXPECT_EQ(p.quick_deaths, 2);
  JobObservation obs;
  obs.entries = {job(7, "PENDING", "JobArrayTaskLimit")};
  obs.progress = &p;
  EXPECT_EQ(kinds(evaluate_job(s, obs, 20)), std::vector<std::string>{"crash-loop"});
  // Each death more (the held tasks released, the next dying too) is the loop's next episode.
  EXPECT_EQ(evaluate_job(s, obs, 20)[0].episode, "after 5_2");
  start_task(p, "5_x", "/log", 25);
  task_ended(p, false);
  EXPECT_EQ(evaluate_job(s, obs, 26)[0].episode, "after 5_x");
  // One step of progress ends the loop.
  start_task(p, "5_3", "/log", 30);
  TrainingLogParser parser;
  apply_lines(p, {"global_step: 1"}, parser, 31);
  EXPECT_EQ(p.quick_deaths, 0);
  task_ended(p, false);
  EXPECT_EQ(p.quick_deaths, 0);  // it had made progress
}

// Task `task` starts at `t`, resumes from its step-40 checkpoint and steps to `last`, a second
// a step.
void resumes_to(JobProgress& p, const std::string& task, double t, std::int64_t last) {
  TrainingLogParser parser;
  start_task(p, task, "/log", t);
  for (std::int64_t n = 40; n <= last; ++n)
    apply_lines(p, {"global_step: " + std::to_string(n)}, parser, t + n);
}

// Runs that resume from their checkpoint and stop at the same step every time (a hang or a
// crash at one bad sample) are a loop too, whatever their nodes; a run past that step ends it.
TEST(JobRules, RunsEndingAtTheSameStepAreALoop) {
  JobSettings s = settings();
  JobProgress p;
  auto runs_to = [&](const std::string& task, double t, std::int64_t last) {
    resumes_to(p, task, t, last);
    task_ended(p, true);
  };
  JobObservation obs;
  obs.progress = &p;
  runs_to("5_1", 0, 50);
  runs_to("5_2", 1000, 50);
  task_ended(p, true);  // the same task is never counted twice
  EXPECT_EQ(p.step_ends, 2);
  auto loop_at = [&](double now) {
    auto k = kinds(evaluate_job(s, obs, now));
    return std::find(k.begin(), k.end(), "crash-loop") != k.end();
  };
  EXPECT_FALSE(loop_at(1100));
  runs_to("5_3", 2000, 50);
  auto fs = evaluate_job(s, obs, 2100);
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].kind, "crash-loop");
  EXPECT_EQ(fs[0].severity, Severity::Critical);
  EXPECT_NE(fs[0].summary.find("3 runs in a row ended at step 50"), std::string::npos)
      << fs[0].summary;
  EXPECT_EQ(fs[0].evidence.at(0), "runs: 5_1, 5_2, 5_3");
  // It survives llmwatch's own restart.
  JobProgress back = JobProgress::from_json(p.to_json());
  EXPECT_EQ(back.step_ends, 3);
  EXPECT_EQ(back.end_step, 50);
  EXPECT_EQ(back.end_step_tasks, "5_1, 5_2, 5_3");
  EXPECT_EQ(back.end_step_episodes, (std::vector<std::string>{"5_1@0", "5_2@0", "5_3@0"}));
  EXPECT_EQ(fs[0].cause, kStepLoop);
  // While a task runs: a run a person started afresh is left to reach the step; an array's
  // next task, with more queued behind it, is no reason to wait (they are held).
  SlurmJob next = job(9, "RUNNING"), rest = job(5, "PENDING");
  rest.array_job_id = next.array_job_id = 5;
  obs.running = next;
  obs.entries = {next};
  EXPECT_FALSE(loop_at(2200));
  obs.entries = {next, rest};
  EXPECT_TRUE(loop_at(2200));
  obs.running.reset();
  obs.entries.clear();
  // A run that passes the step, then stops elsewhere, starts a new count.
  runs_to("5_4", 3000, 60);
  EXPECT_EQ(p.step_ends, 1);
  EXPECT_FALSE(loop_at(3100));
  // Runs that stop at different steps are no loop, however many.
  for (int k = 0; k < 5; ++k) runs_to("6_" + std::to_string(k), 4000 + 1000 * k, 45 + k);
  EXPECT_EQ(p.step_ends, 1);
  // Nor are runs that end well at the same step (an array of sweep runs, each to its max
  // step), and one such end breaks a loop.
  for (int k = 0; k < 4; ++k) {
    resumes_to(p, "7_" + std::to_string(k), 10000 + 1000 * k, 50);
    task_ended(p, k == 1);
  }
  EXPECT_EQ(p.step_ends, 0);
  EXPECT_FALSE(loop_at(14000));
  // A crash signature it did not train past is a failed end, cancelled or not.
  TrainingLogParser parser;
  for (int k = 0; k < 3; ++k) {
    resumes_to(p, "8_" + std::to_string(k), 20000 + 1000 * k, 50);
    apply_lines(p, {"RuntimeError: CUDA error: an illegal memory access was encountered"}, parser,
                20000 + 1000 * k + 60);
    task_ended(p, false);
  }
  EXPECT_EQ(p.step_ends, 3);
  EXPECT_TRUE(loop_at(23000));
}

// The running task hung where the runs before it stopped is the loop's last run: its hang is
// marked so that the policy cancels it without a restart. One run before it is not enough, and
// a task hung at another step is an ordinary hang.
TEST(JobRules, AHangWhereTheRunsBeforeItStoppedIsNotRestarted) {
  JobSettings s = settings();
  s.stale_after = Seconds(60);
  JobProgress p;
  JobObservation obs;
  obs.entries = {job(9, "RUNNING")};
  obs.running = obs.entries[0];
  obs.progress = &p;
  auto hang = [&](double now) -> Finding {
    for (const auto& f : evaluate_job(s, obs, now))
      if (f.kind == "hung") return f;
    return {};
  };
  resumes_to(p, "7", 0, 50);
  task_ended(p, true);
  resumes_to(p, "8", 1000, 50);
  EXPECT_EQ(hang(1500).kind, "hung");
  EXPECT_EQ(hang(1500).cause, "") << "one run before it";
  task_ended(p, true);
  resumes_to(p, "9", 2000, 50);
  EXPECT_EQ(hang(2040).kind, "") << "not hung yet";
  Finding f = hang(2500);
  EXPECT_EQ(f.cause, kStepLoop);
  EXPECT_NE(f.summary.find("the 2 runs before it (7, 8) stopped at step 50 too"), std::string::npos)
      << f.summary;
  EXPECT_EQ(actions_for(f, s), (std::vector<std::string>{"dump", "hold", "cancel", "alert"}));
  for (const auto& other : evaluate_job(s, obs, 2500))
    EXPECT_NE(other.kind, "crash-loop") << "said by the hang while the task runs";
  // Hung at another step: an ordinary hang, restarted.
  resumes_to(p, "10", 3000, 51);
  p.step_ends = 2;
  p.end_step = 50;
  EXPECT_EQ(hang(3500).cause, "");
}

}  // namespace
}  // namespace llmwatch

namespace llmwatch {
namespace {

// Steps read in batches (one per cycle) count by their own pace, not the cycle's.
TEST(JobProgress, StepIntervalIsPerStepNotPerCycle) {
  JobProgress p;
  TrainingLogParser parser;
  start_task(p, "1", "/log", 0);
  int step = 0;
  for (double t = 5; t <= 40; t += 5) {  // every 5 s cycle reads ten 0.5 s steps
    std::vector<std::string> batch;
    for (int i = 0; i < 10; ++i) batch.push_back("global_step: " + std::to_string(++step));
    apply_lines(p, batch, parser, t);
  }
  EXPECT_DOUBLE_EQ(p.longest_interval, 0.5);
}

// Requeue keeps the job id (scontrol requeue, preemption, llmwatch's own requeue): the start
// time tells the runs apart, so the requeued run gets a fresh startup grace and step clock.
TEST(JobProgress, ARequeueUnderTheSameIdIsANewTask) {
  JobProgress p;
  start_task(p, "7", "/log", 100, 100);
  EXPECT_FALSE(is_new_task(p, "7", 100));
  EXPECT_TRUE(is_new_task(p, "7", 900));  // same id, started again
  EXPECT_TRUE(is_new_task(p, "8", 100));
  EXPECT_FALSE(is_new_task(p, "7", 0));  // text output without a start time: cannot tell
  auto back = JobProgress::from_json(p.to_json());
  EXPECT_EQ(back.task_start, 100);
}

// A run that resumed from an earlier checkpoint prints lower steps: they are progress (the
// defect: anything at or below the highest step was ignored, and the run was cancelled as hung).
TEST(JobRules, ALowerStepAfterAResumeIsProgress) {
  Running r;
  JobSettings s = settings();
  s.stale_after = Seconds(300);
  r.step(500, 100);
  r.step(400, 350);  // resumed from the checkpoint at step 400
  EXPECT_EQ(r.progress.last_progress, 350);
  EXPECT_EQ(*r.progress.step, 400);
  EXPECT_EQ(r.progress.best_step, 500);
  EXPECT_TRUE(r.at(600, s).empty());  // 250 s since step 400: not hung
  r.step(400, 610);                   // the same step again is not progress
  EXPECT_EQ(r.progress.last_progress, 350);
  EXPECT_EQ(r.at(700, s), std::vector<std::string>{"hung"});
}

TEST(JobProgress, ShiftTimesMovesEveryRememberedClockReading) {
  JobProgress p;
  start_task(p, "1", "/log", 100);
  p.last_progress = 200;
  p.checkpoint_done = 150;
  shift_times(p, 600);
  EXPECT_EQ(p.task_seen, 700);
  EXPECT_EQ(p.last_progress, 800);
  EXPECT_EQ(p.checkpoint_done, 750);
  EXPECT_EQ(p.checkpoint_since, 0);  // none in progress: stays none
}

// Across a clock jump or a gap the hang rule says "unknown", which never acts.
TEST(JobRules, AnUntrustedClockMakesTheHangRuleUnknown) {
  Running r;
  JobSettings s = settings();
  s.stale_after = Seconds(60);
  r.step(10, 100);
  r.obs.clock_untrusted = "the host clock jumped +10m";
  auto fs = evaluate_job(s, r.obs, 1000);
  ASSERT_EQ(kinds(fs), std::vector<std::string>{"hang-unknown"});
  EXPECT_EQ(fs[0].severity, Severity::Unknown);
  r.obs.clock_untrusted.clear();
  EXPECT_EQ(r.at(1000, s), std::vector<std::string>{"hung"});
}

}  // namespace
}  // namespace llmwatch

namespace llmwatch {
namespace {

// Before the limit: a task 10 minutes from its time limit, with no recent checkpoint, is
// asked to save; with a save in the lead time, or no limit, it is not (before: nothing acted
// on the time limit, and a TIMEOUT lost everything since the last save).
TEST(TimeLimit, ASaveIsAskedForBeforeTheLimit) {
  JobSettings s = settings();
  double now = 1'800'000'000;
  SlurmJob t = job(7, "RUNNING");
  t.start_time = static_cast<std::int64_t>(now) - 50 * 60;
  t.time_limit_minutes = 60;
  JobProgress p;
  p.step = 100;
  p.last_progress = now - 5;
  p.task_seen = now - 3000;
  p.advances = 50;
  p.longest_interval = 10;
  JobObservation obs;
  obs.entries = {t};
  obs.running = t;
  obs.progress = &p;
  auto f = evaluate_job(s, obs, now);
  ASSERT_EQ(kinds(f), std::vector<std::string>{"time-limit"});
  EXPECT_EQ(f[0].severity, Severity::Info);
  EXPECT_NE(f[0].summary.find("reaches its time limit in 10m"), std::string::npos) << f[0].summary;
  EXPECT_EQ(actions_for(f[0], s), (std::vector<std::string>{"save", "alert"}));
  p.checkpoint_done = now - 60;  // saved a minute ago: nothing to ask
  EXPECT_TRUE(evaluate_job(s, obs, now).empty());
  p.checkpoint_done = 0;
  obs.running->time_limit_minutes = 0;  // UNLIMITED
  EXPECT_TRUE(evaluate_job(s, obs, now).empty());
}

}  // namespace
}  // namespace llmwatch
