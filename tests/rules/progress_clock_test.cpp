// #30: progress is clocked at the log's write, not at the read that found it. A read every
// 30 s made the last step look up to 30 s younger than it was, so a hang with a 60 s allowance
// was found ~80 s after its last step. And what the allowance learns: each step's time and
// each silence of the log seen at a read, never a save or an evaluation pass.
#include <gtest/gtest.h>

#include "config/config.h"
#include "rules/job_progress.h"

namespace llmwatch {
namespace {

JobProgress stepping(double at) {
  JobProgress p;
  p.task = "7";
  p.step = 90;
  p.advances = 10;  // past the warm-up: intervals count
  p.last_progress = at;
  p.last_read = at;
  return p;
}

void read_at(JobProgress& p, double now, double mtime, std::vector<std::string> lines) {
  TrainingLogParser parser;
  const double before = p.last_progress;
  ProgressUpdate update(p, parser, now);
  update.feed(std::vector<std::string_view>(lines.begin(), lines.end()));
  update.finish(written_time(mtime, p.last_read, now));
  finish_read(p, before, now);
}

TEST(ProgressClock, AnMtimeIsTakenOnlyWhenItCanBeTrue) {
  EXPECT_DOUBLE_EQ(written_time(1010, 1000, 1030), 1010);
  EXPECT_DOUBLE_EQ(written_time(990, 1000, 1030), 1030) << "bytes not there at the last read";
  EXPECT_DOUBLE_EQ(written_time(1040, 1000, 1030), 1030) << "a clock ahead of ours";
  EXPECT_DOUBLE_EQ(written_time(1010, 0, 1030), 1030) << "a first read: nothing bounds it";
  EXPECT_DOUBLE_EQ(written_time(0, 1000, 1030), 1030) << "no mtime";
}

TEST(ProgressClock, AStepIsClockedAtTheWriteNotAtTheRead) {
  JobProgress p = stepping(1000);
  read_at(p, 1030, 1012, {"global_step: 91"});
  EXPECT_DOUBLE_EQ(p.last_progress, 1012);
  JobSettings job;  // the shipped defaults
  p.longest_interval = 10;
  auto v = evaluate_stale(p, job, 1030);
  EXPECT_DOUBLE_EQ(v.idle, 18);
  EXPECT_DOUBLE_EQ(v.allowance, 45) << v.how;  // 4 x 10 s steps is under the 45 s floor
  // An mtime that cannot be true leaves the read's time, as before.
  read_at(p, 1060, 900, {"global_step: 92"});
  EXPECT_DOUBLE_EQ(p.last_progress, 1060);
}

TEST(ProgressClock, TheIntervalIsLearnedBetweenWrites) {
  JobProgress p = stepping(1000);
  // Read 25 s after a step written 10 s after the one before.
  read_at(p, 1035, 1010, {"global_step: 91"});
  EXPECT_DOUBLE_EQ(p.longest_interval, 10);
}

TEST(ProgressClock, ASaveBetweenTwoStepsIsNoStepInterval) {
  JobProgress p = stepping(1000);
  read_at(p, 1030, 1010, {"global_step: 91", "Saving checkpoint at step 91"});
  read_at(p, 1960, 1950,
          {"Global Checkpoint Save : Rank: 0 : Iteration: 91 : Save duration: 900.000s",
           "global_step: 92"});
  EXPECT_DOUBLE_EQ(p.longest_interval, 10) << "the save's 15 minutes were learned as a step";
  read_at(p, 1990, 1960, {"global_step: 93"});
  EXPECT_DOUBLE_EQ(p.longest_interval, 10);
}

// A save that began and ended within one read is part of that read's time per step: with saves
// every 5 steps and a read every 30 s, a run of 10 s steps was never learned (the bench found
// its hang after 86 s, on the first steps' grace).
TEST(ProgressClock, ASaveWithinOneReadStillTeachesTheStepInterval) {
  JobProgress p = stepping(1000);
  read_at(p, 1030, 1030,
          {"global_step: 91", "Saving checkpoint at step 91",
           "Global Checkpoint Save : Rank: 0 : Iteration: 91 : Save duration: 0.010s",
           "global_step: 92", "global_step: 93"});
  EXPECT_DOUBLE_EQ(p.longest_interval, 10);
}

// The time between two saves is taken between their writes too: the second save's clock moved
// to its write while the interval was still reckoned from the read (25 s too long here).
TEST(ProgressClock, TheCheckpointIntervalIsBetweenTheSavesWrites) {
  JobProgress p = stepping(1000);
  const std::string saved = "Global Checkpoint Save : Rank: 0 : Iteration: 91 : Save duration: 1s";
  read_at(p, 1030, 1010, {"global_step: 91", "Saving checkpoint at step 91", saved});
  EXPECT_DOUBLE_EQ(p.checkpoint_done, 1010);
  read_at(p, 1360, 1310, {"global_step: 92", "Saving checkpoint at step 92", saved});
  EXPECT_DOUBLE_EQ(p.checkpoint_done, 1310);
  EXPECT_DOUBLE_EQ(p.checkpoint_interval, 300);
}

TEST(ProgressClock, ASilenceSeenAtAReadIsLearned) {
  // A logger that flushes every 30 s: reads at 10 s see nothing, then 15 steps at once.
  JobProgress p = stepping(1000);
  read_at(p, 1010, 1000, {});
  read_at(p, 1020, 1000, {});
  EXPECT_DOUBLE_EQ(p.silent_until, 1020);
  std::vector<std::string> burst;
  for (int s = 91; s <= 105; ++s) burst.push_back("global_step: " + std::to_string(s));
  read_at(p, 1040, 1030, burst);
  EXPECT_DOUBLE_EQ(p.longest_interval, 20) << "per step it is 2 s; the log was silent 20 s";
  EXPECT_DOUBLE_EQ(p.silent_until, 0);
}

TEST(ProgressClock, UntilTheIntervalIsLearnedTheFirstStepsHaveTheirGrace) {
  JobProgress p = stepping(1000);
  p.advances = 1;
  JobSettings job;
  auto v = evaluate_stale(p, job, 1050);
  EXPECT_DOUBLE_EQ(v.allowance, 120);
  EXPECT_FALSE(v.hung);
  EXPECT_EQ(v.how, "first_steps_grace, no step interval learned yet");
  job.stale_floor = Seconds(600);  // a longer floor wins
  EXPECT_DOUBLE_EQ(evaluate_stale(p, job, 1050).allowance, 600);
}

}  // namespace
}  // namespace llmwatch
