#include "rules/cancel_held.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

constexpr double kAt = 1'800'000'000;

SlurmJob task(const std::string& state) {
  SlurmJob j;
  j.job_id = 5;
  j.array_job_id = 4;
  j.array_task_id = 5;
  j.state = state;
  j.start_time = 1'799'999'000;
  return j;
}

TEST(CancelHeld, ACancelledTaskStillRunningIsCancelledAgainThenLeftToAPerson) {
  CancelsDone once{1, kAt};
  EXPECT_FALSE(cancel_not_held("tr", task("RUNNING"), once, kAt + kCancelHoldsWithin - 1));
  auto f = cancel_not_held("tr", task("RUNNING"), once, kAt + 40);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->key, "job:tr/cancel-not-held");
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_EQ(f->cause, "again-1");
  EXPECT_EQ(f->episode, "4_5@1799999000#1");
  EXPECT_EQ(not_held_run_key(*f), "4_5@1799999000");
  EXPECT_NE(f->summary.find("4_5 is RUNNING 40s after llmwatch's scancel"), std::string::npos)
      << f->summary;
  EXPECT_NE(f->summary.find("cancelling it again"), std::string::npos) << f->summary;
  // Each cancel that does not hold is its own episode: told and acted on anew.
  auto twice = cancel_not_held("tr", task("CONFIGURING"), {2, kAt + 40}, kAt + 80);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->cause, "again-2");
  EXPECT_EQ(twice->episode, "4_5@1799999000#2");
  auto given_up = cancel_not_held("tr", task("RUNNING"), {kMaxCancels, kAt + 80}, kAt + 120);
  ASSERT_TRUE(given_up);
  EXPECT_EQ(given_up->cause, "") << "no cancel is asked for";
  EXPECT_NE(given_up->summary.find("3 scancels by llmwatch"), std::string::npos)
      << given_up->summary;
  EXPECT_NE(given_up->summary.find("needs a person"), std::string::npos) << given_up->summary;
}

// Slurm at work on the cancel, or a task that is no longer this run: nothing to say.
TEST(CancelHeld, ATaskEndingPendingOrPausedIsNoLostCancel) {
  for (const char* state : {"COMPLETING", "PENDING", "REQUEUED", "SUSPENDED", "REQUEUE_HOLD"})
    EXPECT_FALSE(cancel_not_held("tr", task(state), {1, kAt}, kAt + 600)) << state;
  EXPECT_FALSE(cancel_not_held("tr", task("RUNNING"), {0, 0}, kAt));
  // A clock that went back is no evidence either.
  EXPECT_FALSE(cancel_not_held("tr", task("RUNNING"), {1, kAt}, kAt - 600));
}

TEST(CancelHeld, TheKeysOfACancelAndOfEachCancelAgainNameTheirTask) {
  EXPECT_EQ(cancel_key("4_5@17", ""), "cancel:4_5@17");
  EXPECT_EQ(cancel_key("4_5@17", "again-2"), "cancel:4_5@17/again-2");
  EXPECT_EQ(cancelled_run_key("cancel:4_5@17"), "4_5@17");
  EXPECT_EQ(cancelled_run_key("cancel:4_5@17/again-2"), "4_5@17");
  EXPECT_EQ(cancelled_run_key("restart:4_5@17"), "");
  Finding other = make_finding("job:tr", "tr", "hung", Severity::Critical, "x");
  other.episode = "4_5@17#1";
  EXPECT_EQ(not_held_run_key(other), "");
}

}  // namespace
}  // namespace llmwatch
