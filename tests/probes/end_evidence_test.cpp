#include "probes/end_evidence.h"

#include <gtest/gtest.h>

#include "fake_slurm.h"

namespace llmwatch {
namespace {

SlurmJob task_7() {
  SlurmJob t;
  t.job_id = 7;
  t.state = "RUNNING";
  t.nodes = "node-[1-2]";
  t.start_time = 1'700'000'000;
  return t;
}

// slurmctld forgot the task (MinJobAge) and squeue no longer lists it: before, the end was
// "no longer known" and classed unknown; the cluster's accounting still says how it ended.
TEST(EndEvidence, ATaskSlurmForgotIsReadFromAccounting) {
  testing::FakeSlurm slurm;
  slurm.accounted_jobs["7"] = {{"JobID", "7"},       {"State", "CANCELLED by 1000"},
                               {"ExitCode", "0:15"}, {"NodeList", "node-[1-2]"},
                               {"Reason", "None"},   {"Start", "1700000000"},
                               {"End", "1700000420"}};
  auto o = observe_end(slurm, task_7(), std::nullopt, {}, {});
  EXPECT_EQ(o.evidence.source, "sacct");
  EXPECT_EQ(o.evidence.end_time, 1'700'000'420) << "the ledger's end of the allocation";
  EXPECT_EQ(o.evidence.state, "CANCELLED by 1000");
  EXPECT_EQ(o.evidence.exit_code, "0:15");
  EXPECT_EQ(o.layout.nodes, (std::vector<std::string>{"node-1", "node-2"}));
}

// While Slurm itself still knows the task, accounting is not asked (one command fewer), and
// where it keeps no accounting the end stays "no longer known", as before.
TEST(EndEvidence, AccountingIsAskedOnlyWhenSlurmForgotAndMayKnowNothing) {
  testing::FakeSlurm slurm;
  slurm.accounted_jobs["7"] = {{"JobID", "7"}, {"State", "COMPLETED"}};
  auto shown =
      observe_end(slurm, task_7(), std::nullopt,
                  {{"JobState", "FAILED"}, {"ExitCode", "1:0"}, {"EndTime", "Unknown"}}, {});
  EXPECT_EQ(shown.evidence.source, "scontrol");
  EXPECT_EQ(shown.evidence.state, "FAILED");
  EXPECT_EQ(shown.evidence.end_time, 0) << "Unknown is no time";
  auto ended = observe_end(slurm, task_7(), std::nullopt, {{"EndTime", "2026-11-22T01:36:25"}}, {});
  EXPECT_GT(ended.evidence.end_time, 1'700'000'000);
  slurm.accounted_jobs.clear();
  auto none = observe_end(slurm, task_7(), std::nullopt, {}, {});
  EXPECT_EQ(none.evidence.source, "");
  EXPECT_EQ(none.evidence.state, "");
}

}  // namespace
}  // namespace llmwatch
