// When the daemon wakes before its next tick (#30): at the moment a running job's hang
// allowance runs out, as the last cycle left its progress.
#include "cycle/hang_wake.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "rules/job_progress.h"
#include "store/hang_confirm.h"
#include "store/keys.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct Watched {
  testing::TempDir dir;
  Store store{dir.path};
  Config config;
  double now = 1'800'000'000;
  Watched() {
    JobSettings job;
    job.name = "tr";
    job.stale_after = Seconds(120);
    config.jobs.push_back(job);
  }
  void running(const std::string& state, double last_step_ago) {
    store.put(kv::job_view("tr"), "{\"entries\":[{\"id\":\"7\",\"state\":\"" + state + "\"}]}",
              now);
    JobProgress p;
    p.task = "7";
    p.task_seen = now - 3600;
    p.step = 100;
    p.advances = 50;
    p.last_progress = now - last_step_ago;
    store.put_progress("tr", std::move(p), now);
  }
  // At the shipped allowance, running, its last step `last_step_ago`, `interval` its longest
  // step interval, and an NCCL error read `line_ago` with no step since: stored, and returned.
  JobProgress after_nccl_error(double last_step_ago, double interval, double line_ago) {
    config.jobs[0].stale_after.reset();
    running("RUNNING", last_step_ago);
    JobProgress p = store.progress("tr");
    p.longest_interval = interval;
    p.crash = "nccl-error";
    p.crash_advances = p.advances;
    p.crash_seen = now - line_ago;
    store.put_progress("tr", JobProgress(p), now);
    return p;
  }
};

TEST(HangWake, TheDeadlineIsWhenTheAllowanceRunsOut) {
  Watched w;
  w.running("RUNNING", 30);
  auto at = earliest_hang_deadline(w.config, w.store, w.now, w.now, w.now + 300);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now + 90);
}

// Progress is clocked when a tick reads it, so the allowance often runs out right on a later
// tick, a moment after it looked (idle == allowance is not yet hung): the wake is then at once,
// not a whole interval later (the bench found hangs at 81 s with the wake in place).
TEST(HangWake, AnAllowanceRunningOutOnTheTickWakesAtOnce) {
  Watched w;
  w.running("RUNNING", 120);
  auto at = earliest_hang_deadline(w.config, w.store, w.now, w.now, w.now + 30);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now);
}

// #30: a deadline that runs out while a cycle runs (between the clock it judged the jobs by and
// the wake's scheduling) was taken as found by it, and waited for the next tick: after a crash
// line the sampler brings a cycle 3 s on, where the dying task's 8 s from the line often end, and
// a lingering task was restarted 38 s after its line, not 8 s (bench/crash_latency.py). It wakes
// at once now; one that ran out by the look stays that cycle's. So does a second dump due since.
TEST(HangWake, ADeadlineThatRanOutWhileTheCycleRanWakesAtOnce) {
  Watched w;
  w.running("RUNNING", 120.02);  // stale_after 120 s: not hung at the look 50 ms ago, hung now
  auto at = earliest_hang_deadline(w.config, w.store, w.now - 0.05, w.now, w.now + 30);
  ASSERT_TRUE(at) << "missed until the next tick";
  EXPECT_DOUBLE_EQ(*at, w.now);
  EXPECT_FALSE(earliest_hang_deadline(w.config, w.store, w.now - 0.01, w.now, w.now + 30))
      << "hung at the look: that cycle found it";
  Watched c;
  c.running("RUNNING", 200);  // hung, found, dumped once 10.02 s ago (confirm_hang 10 s)
  put_hang_confirm(c.store, "tr", {"7", "(the first dump)", c.now - 10.02}, c.now);
  at = earliest_hang_deadline(c.config, c.store, c.now - 0.05, c.now, c.now + 30);
  ASSERT_TRUE(at) << "the second dump missed until the next tick";
  EXPECT_DOUBLE_EQ(*at, c.now);
  EXPECT_FALSE(earliest_hang_deadline(c.config, c.store, c.now, c.now + 0.1, c.now + 30))
      << "due by the look: that cycle's";
}

TEST(HangWake, NoWakeForAJobThatIsNotRunningIsHungOrOutlastsTheTick) {
  Watched pending;
  pending.running("PENDING", 30);
  EXPECT_FALSE(earliest_hang_deadline(pending.config, pending.store, pending.now, pending.now,
                                      pending.now + 300));
  Watched hung;
  hung.running("RUNNING", 600);
  EXPECT_FALSE(earliest_hang_deadline(hung.config, hung.store, hung.now, hung.now, hung.now + 300))
      << "already hung: the tick finds it";
  Watched later;
  later.running("RUNNING", 0);
  EXPECT_FALSE(
      earliest_hang_deadline(later.config, later.store, later.now, later.now, later.now + 60))
      << "the tick comes first";
}

// A hang's first dump waits for its second: the daemon wakes when it is due. After a rank's fatal
// line, with 2 s steps, that is 4 s after the first dump, not confirm_hang's 10 s (#30: the
// confirmation held the crash's restart back by 10 s).
TEST(HangWake, TheSecondDumpAfterAFatalLineIsDueAStepIntervalAfterTheFirst) {
  Watched w;
  JobProgress p = w.after_nccl_error(9, 2, 8);
  put_hang_confirm(w.store, "tr", {"7", "(the first dump)", w.now - 1}, w.now);
  auto at = earliest_hang_deadline(w.config, w.store, w.now, w.now, w.now + 30);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now + 3);
  // Without the line, the configured gap.
  p = w.store.progress("tr");
  p.crash.clear();
  w.store.put_progress("tr", std::move(p), w.now);
  at = earliest_hang_deadline(w.config, w.store, w.now, w.now, w.now + 30);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now + 9);
}

// #30: the look for a fatal line's rank is due 4 s after the line, and again at 8 s where the
// rank still ran, before the two intervals its run waits: the daemon wakes for each, then no more.
TEST(HangWake, TheLookForAFatalLinesRankWakesTheDaemon) {
  Watched w;
  JobProgress p = w.after_nccl_error(5, 10, 2);  // the line 2 s ago
  auto at = earliest_hang_deadline(w.config, w.store, w.now, w.now, w.now + 30);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now + 2 + kWakePastDeadline);
  // Looked, and it ran: the second look, 8 s after the line.
  p.crash_rank_looked = w.now + 2;
  w.store.put_progress("tr", JobProgress(p), w.now + 2);
  at = earliest_hang_deadline(w.config, w.store, w.now + 2, w.now + 2, w.now + 30);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now + 6 + kWakePastDeadline);
  // Looked twice: the wake is the two intervals' (20 s after the last step, 5 s before now).
  p.crash_rank_looked = w.now + 6;
  w.store.put_progress("tr", std::move(p), w.now + 6);
  at = earliest_hang_deadline(w.config, w.store, w.now + 6, w.now + 6, w.now + 30);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(*at, w.now + 15);
}

}  // namespace
}  // namespace llmwatch
