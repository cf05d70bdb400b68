#include "probes/job_logs.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace llmwatch {
namespace {

TEST(JobLogs, DefaultIsTheTasksStdout) {
  SlurmJob t;
  t.job_id = 7;
  t.name = "tr";
  t.std_out = "/logs/%x-%j.out";
  EXPECT_EQ(log_paths_for(JobSettings{}, t), std::vector<std::string>{"/logs/tr-7.out"});
}

TEST(JobLogs, PatternsThenGlobsForPerRankLogs) {
  testing::TempDir dir;
  for (const char* rank : {"rank-1.log", "rank-0.log"})
    testing::write_file(dir / ("42-" + std::string(rank)), "");
  SlurmJob t;
  t.job_id = 42;
  JobSettings job;
  job.logs = {dir.path + "/%j-rank-*.log", dir.path + "/missing-%j.log", dir.path + "/none-*.log"};
  EXPECT_EQ(log_paths_for(job, t),
            (std::vector<std::string>{dir / "42-rank-0.log", dir / "42-rank-1.log",
                                      dir / "missing-42.log"}));
}

}  // namespace
}  // namespace llmwatch
