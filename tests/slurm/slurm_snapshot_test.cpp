// A wake between ticks reads the tick's squeue and sinfo answers and asks slurmctld nothing
// (#30): with no Slurm to ask at all, a replay still answers, and a tick that fails keeps
// nothing to replay.
#include "slurm/slurm_snapshot.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace llmwatch
