// A wake between ticks reads the tick's squeue and sinfo answers and asks slurmctld nothing
// (#30): with no Slurm to ask at all, a replay still answers, and a tick that fails keeps
// nothing to replay.
#include "slurm/slurm_snapshot.h"

#include <gtest/gtest.h>

#include "fake_slurm.h"

namespace llmwatch {
namespace {

SlurmSettings no_slurm() {
  SlurmSettings s;
  s.bin_dir = "/nonexistent/llmwatch-no-slurm";
  s.timeout = Seconds(5);
  return s;
}

TEST(SlurmSnapshot, AWakeReplaysTheTicksAnswersWithoutAskingSlurm) {
  SlurmSnapshot snap;
  SqueueParse q;
  q.jobs.push_back(SlurmJob{});
  q.jobs.back().job_id = 7;
  snap.queue = q;
  snap.queue_asked = std::chrono::steady_clock::now() - std::chrono::seconds(5);
  snap.nodes = SinfoParse{};
  SnapshotSlurm wake(no_slurm(), snap, true);
  auto got = wake.queue();
  ASSERT_TRUE(got.ok()) << got.error;
  ASSERT_EQ(got.jobs.size(), 1u);
  EXPECT_EQ(got.jobs[0].job_id, 7);
  // It says how old it is: the states it holds are the tick's, not the wake's.
  EXPECT_GE(got.age_s, 5);
  EXPECT_LT(got.age_s, 60);
  EXPECT_TRUE(wake.nodes().ok());
}

TEST(SlurmSnapshot, ATickThatFailsLeavesNothingToReplay) {
  SlurmSnapshot snap;
  snap.queue = SqueueParse{};
  SnapshotSlurm tick(no_slurm(), snap, false);
  EXPECT_FALSE(tick.queue().ok());
  EXPECT_FALSE(snap.queue) << "a wake must not act on an answer older than the last tick";
}

// A restart waiting for a crashed task's end asks Slurm about that task alone (#30): the
// snapshot then lists it with its final state, as the next squeue would, so that a wake finds
// the end without a poll of the queue. A task still running or completing, or one Slurm
// cannot say about, stays as it was.
TEST(SlurmSnapshot, ATaskAskedAboutAloneIsMarkedEndedOnlyWhenSlurmSaysSo) {
  SlurmSnapshot snap;
  SqueueParse q;
  for (std::int64_t id : {7, 8, 9, 10}) {
    q.jobs.push_back(SlurmJob{});
    q.jobs.back().job_id = id;
    q.jobs.back().state = "RUNNING";
  }
  snap.queue = q;
  testing::FakeSlurm slurm;
  slurm.shown_jobs["7"] = {{"JobState", "FAILED"}};
  slurm.shown_jobs["8"] = {{"JobState", "COMPLETING"}};
  slurm.shown_jobs["10"] = {{"JobState", "TIMEOUT"}};
  auto learned = settle_ended(snap, slurm, {"7", "8", "9"});
  EXPECT_EQ(learned.ended, 1);
  EXPECT_EQ(learned.unanswered, 1) << "9";
  EXPECT_EQ(snap.queue->jobs[0].state, "FAILED");
  EXPECT_EQ(snap.queue->jobs[1].state, "RUNNING") << "completing, not ended: the restart waits";
  EXPECT_EQ(snap.queue->jobs[2].state, "RUNNING") << "Slurm said nothing of 9";
  EXPECT_EQ(snap.queue->jobs[3].state, "RUNNING") << "10 was not asked about";
  EXPECT_EQ(settle_ended(snap, slurm, {"7"}).ended, 0) << "already marked";
}

}  // namespace
}  // namespace llmwatch
