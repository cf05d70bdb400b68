#include <gtest/gtest.h>

#include "registry.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

SlurmJob task(int array, int id, const std::string& state) {
  SlurmJob j;
  j.job_id = array * 10 + id;
  j.array_job_id = array;
  j.array_task_id = id;
  j.state = state;
  j.name = "tr";
  return j;
}

// An array throttled with %1 restarts by itself, also when a single task is left ("3_2").
TEST(RestartAction, ArrayWithPendingTasksRestartsByItself) {
  testing::TempDir dir;
  Store store(dir.path);
  Config config;
  SlurmSettings no_slurm;
  no_slurm.bin_dir = "/nonexistent";  // any Slurm call would fail the outcome
  SlurmClient slurm(no_slurm);
  ActionContext ctx{config, slurm, store, 0};
  ActionRequest r;
  r.job = "tr";
  r.task = task(3, 1, "RUNNING");
  r.queue = {*r.task, task(3, 2, "PENDING")};
  auto out = find_action("restart")->execute(r, ctx);
  EXPECT_EQ(out.state, "done");
  EXPECT_EQ(out.detail, "next task of array 3_2 starts by itself");
  EXPECT_EQ(slurm.calls(), 0);
  // Another array's pending task does not count; the resubmission is attempted (and fails here).
  r.queue = {*r.task, task(4, 2, "PENDING")};
  r.task->command = "/train.sh";
  out = find_action("restart")->execute(r, ctx);
  EXPECT_EQ(out.state, "failed");
  EXPECT_EQ(slurm.calls(), 1);
}

}  // namespace
}  // namespace llmwatch
