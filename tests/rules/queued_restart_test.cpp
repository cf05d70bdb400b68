#include "rules/queued_restart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "slurm/hostlist.h"

namespace llmwatch {
namespace {

SlurmJob queued_job(int id, const std::string& state, std::int64_t start) {
  SlurmJob j;
  j.job_id = id;
  j.name = "tr";
  j.state = state;
  j.start_time = start;
  if (state == "PENDING") j.reason = "Dependency";
  return j;
}

// Task 7 printed an NCCL error at its 5th advance; job 42 is queued behind it.
struct Queued {
  QueuedRestart queued{"42", "7", 1000, ""};
  JobProgress progress;
  Queued() {
    progress.task = "7";
    progress.task_start = 1000;
    progress.crash = "nccl-error";
    progress.advances = progress.crash_advances = 5;
  }
  std::optional<Finding> judge(const std::vector<SlurmJob>& entries) {
    return restart_not_needed("tr", queued, entries, progress);
  }
};

TEST(QueuedRestart, ADyingTaskKeepsItsQueuedRestart) {
  Queued q;
  EXPECT_FALSE(q.judge({queued_job(7, "RUNNING", 1000), queued_job(42, "PENDING", 0)}));
  EXPECT_FALSE(q.judge({queued_job(7, "COMPLETING", 1000), queued_job(42, "PENDING", 0)}));
  // Gone, or started: Slurm decided as it was asked to.
  EXPECT_FALSE(q.judge({queued_job(42, "PENDING", 0)}));
  EXPECT_FALSE(q.judge({queued_job(42, "RUNNING", 2000)}));
  EXPECT_FALSE(q.judge({queued_job(7, "RUNNING", 1000)}));
}

TEST(QueuedRestart, ATaskThatGoesOnHasItsQueuedRestartWithdrawn) {
  Queued q;
  auto requeued = q.judge({queued_job(7, "PENDING", 1000), queued_job(42, "PENDING", 0)});
  ASSERT_TRUE(requeued);
  EXPECT_EQ(requeued->kind, "restart-unneeded");
  EXPECT_EQ(requeued->severity, Severity::Warning);
  EXPECT_EQ(requeued->cause, "42");
  EXPECT_EQ(requeued->summary,
            "job 42 was queued to restart tr once 7 ended, but 7 is back in the queue (requeued "
            "by Slurm): withdrawing it");
  auto again = q.judge({queued_job(7, "RUNNING", 1500), queued_job(42, "PENDING", 0)});
  ASSERT_TRUE(again);
  EXPECT_NE(again->summary.find("runs again under a new start"), std::string::npos);
  q.progress.advances = 6;
  auto steps_on = q.judge({queued_job(7, "RUNNING", 1000), queued_job(42, "PENDING", 0)});
  ASSERT_TRUE(steps_on);
  EXPECT_NE(steps_on->summary.find("7 steps on past its nccl-error crash"), std::string::npos);
  // A person resubmitted the run: the queued one would start beside theirs.
  q.progress.advances = 5;
  auto beside = q.judge(
      {queued_job(7, "RUNNING", 1000), queued_job(42, "PENDING", 0), queued_job(43, "PENDING", 0)});
  ASSERT_TRUE(beside);
  EXPECT_EQ(beside->summary,
            "job 42 was queued to restart tr once 7 ended, but the job has another run, 43 "
            "(PENDING): withdrawing it");
  EXPECT_TRUE(q.judge({queued_job(42, "PENDING", 0), queued_job(43, "RUNNING", 1900)}));
  q.progress.advances = 6;
  // Progress of another task is not task 7's.
  q.progress.task = "8";
  EXPECT_FALSE(q.judge({queued_job(7, "RUNNING", 1000), queued_job(42, "PENDING", 0)}));
}

// A lone array task's restart is the array's next task: sbatch gives the array's id, and
// squeue lists it as "1001_[8]" while it is pending.
TEST(QueuedRestart, AnArraysQueuedRestartIsKnownByItsArrayId) {
  Queued q;
  q.queued = {"1001", "900_7", 1000, ""};
  q.progress.task = "900_7";
  SlurmJob task = queued_job(907, "PENDING", 1000), next = queued_job(1001, "PENDING", 0);
  task.array_job_id = 900;
  task.array_task_id = 7;
  next.array_job_id = 1001;
  next.array_task_string = "8";
  auto f = q.judge({task, next});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "1001");
  EXPECT_NE(f->summary.find("900_7 is back in the queue"), std::string::npos) << f->summary;
  EXPECT_TRUE(submitted_as(next, "1001"));
  EXPECT_FALSE(submitted_as(task, "1001"));
}

// The store's line is the rule's only memory of what it queued: anything but a whole record
// (a torn write, bytes) reads as none, never as another job to withdraw. A record written
// before it kept the nodes it excludes (three fields) reads as excluding none known; one written
// before it kept when it was queued (four), as queued at an unknown time (0).
TEST(QueuedRestart, OnlyAWholeRecordIsRead) {
  QueuedRestart q{"42", "3_1", 1'799'999'000, "node-[2-3]", 1'800'000'055.25};
  auto back = QueuedRestart::from_text(q.to_text());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to_text(), q.to_text());
  EXPECT_EQ(back->excluded, "node-[2-3]");
  EXPECT_EQ(back->queued_at, 1'800'000'055.25);
  auto older = QueuedRestart::from_text("42\t7\t1");
  ASSERT_TRUE(older);
  EXPECT_EQ(older->excluded, "");
  auto without_time = QueuedRestart::from_text("42\t7\t1\tnode-2");
  ASSERT_TRUE(without_time);
  EXPECT_EQ(without_time->excluded, "node-2");
  EXPECT_EQ(without_time->queued_at, 0);
  for (const char* bad :
       {"", "42", "42\t7", "42\t7\t", "\t7\t1", "42\t\t1", "42\t7\t1x", "42\t7\t1\t2\t3\t4",
        "42\t7\t1\t2\tx", "42\t7\t1\t2\tnan", "42\t7\t99999999999999999999999"})
    EXPECT_FALSE(QueuedRestart::from_text(bad)) << bad;
  // Whatever is read reads back the same once written again.
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 24, ' ');
    for (auto& c : text) c = "42\t7-_ x\xff"[rng() % 9];
    if (auto got = QueuedRestart::from_text(text)) {
      auto again = QueuedRestart::from_text(got->to_text());
      ASSERT_TRUE(again) << got->to_text();
      EXPECT_EQ(again->to_text(), got->to_text());
    }
  }
}

// Nodes the crash is attributed to after its restart was queued: the queued job is kept off
// them, only while it is pending behind the very task it was queued for, and only for nodes it
// is not kept off already.
TEST(QueuedRestart, NodesNamedSinceTheRestartWasQueuedAreToldOnceMissed) {
  QueuedRestart queued{"42", "7", 1000, "node-4"};
  auto misses = [&](const std::vector<SlurmJob>& entries, std::vector<std::string> suspects) {
    return queued_restart_misses("tr", queued, entries, suspects);
  };
  std::vector<SlurmJob> waiting = {queued_job(7, "RUNNING", 1000), queued_job(42, "PENDING", 0)};
  auto f = misses(waiting, {"node-2", "node-4", "node-2", "node-3"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "restart-keep-off");
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->cause, "node-[2-3]");
  EXPECT_EQ(f->episode, "42");
  EXPECT_EQ(f->summary,
            "job 42, queued to restart tr once 7 ended, would start on node-[2-3], which the "
            "crash is attributed to since it was queued: keeping them off");
  EXPECT_FALSE(misses(waiting, {"node-4"}));
  EXPECT_FALSE(misses(waiting, {}));
  // Started, gone, or behind a task that is gone or requeued: nothing to keep off any more.
  EXPECT_FALSE(
      misses({queued_job(7, "RUNNING", 1000), queued_job(42, "RUNNING", 1500)}, {"node-2"}));
  EXPECT_FALSE(misses({queued_job(42, "PENDING", 0)}, {"node-2"}));
  EXPECT_FALSE(misses({queued_job(7, "PENDING", 1000), queued_job(42, "PENDING", 0)}, {"node-2"}));
  EXPECT_FALSE(misses({queued_job(7, "RUNNING", 1500), queued_job(42, "PENDING", 0)}, {"node-2"}));
}

// #30: nodes the suspicion ledger came to hold since the restart was queued are kept off too
// (the act phase gives the crash's own suspects the run's room first), and the finding says
// which is which.
TEST(QueuedRestart, TheLedgersNewRepeatOffendersAreToldBesideTheCrashsSuspects) {
  QueuedRestart queued{"42", "7", 1000, "node-4", 1'800'000'055};
  std::vector<SlurmJob> waiting = {queued_job(7, "RUNNING", 1000), queued_job(42, "PENDING", 0)};
  auto f = queued_restart_misses("tr", queued, waiting, {}, {"node-5"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "node-5");
  EXPECT_EQ(f->summary,
            "job 42, queued to restart tr once 7 ended, would start on node-5, which the "
            "suspicion ledger holds with repeated incidents since it was queued: keeping it off");
  f = queued_restart_misses("tr", queued, waiting, {"node-3"}, {"node-1", "node-3", "node-4"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "node-[1,3]");
  EXPECT_NE(f->summary.find("node-3, which the crash is attributed to, and node-1, which the "
                            "suspicion ledger holds"),
            std::string::npos)
      << f->summary;
  EXPECT_FALSE(queued_restart_misses("tr", queued, waiting, {}, {"node-4"}));
}

// Properties over random queues, records and suspects: it never throws; it speaks only while
// the queued job is pending behind the very task it was queued for, still running; and it names
// exactly the suspects the queued job is not kept off, each once.
TEST(QueuedRestart, NodesMissedAreExactlyTheSuspectsNotKeptOff) {
  std::mt19937 rng(11);
  const std::vector<std::string> states = {"PENDING", "RUNNING", "COMPLETING", "FAILED"};
  const std::vector<std::string> lists = {"", "node-1", "node-[1-3]", "node-[", "(null)"};
  for (int i = 0; i < 5000; ++i) {
    QueuedRestart queued{"42", "7", 1000, lists[rng() % lists.size()]};
    std::vector<SlurmJob> entries;
    if (rng() % 4) entries.push_back(queued_job(7, states[rng() % 4], rng() % 3 ? 1000 : 1500));
    if (rng() % 4) entries.push_back(queued_job(42, states[rng() % 4], 0));
    std::vector<std::string> suspects;
    for (int n = static_cast<int>(rng() % 4); n > 0; --n)
      suspects.push_back("node-" + std::to_string(1 + rng() % 5));
    std::optional<Finding> f;
    ASSERT_NO_THROW(f = queued_restart_misses("tr", queued, entries, suspects));
    if (!f) continue;
    bool waits = false, runs = false;
    for (const auto& e : entries) {
      waits |= e.job_id == 42 && e.pending();
      runs |= e.job_id == 7 && e.running() && e.start_time == 1000;
    }
    EXPECT_TRUE(waits && runs) << f->summary;
    const auto kept = hosts_in(queued.excluded);
    std::set<std::string> expected;
    for (const auto& node : suspects)
      if (std::find(kept.begin(), kept.end(), node) == kept.end()) expected.insert(node);
    const auto named = hosts_in(f->cause);
    EXPECT_EQ(std::set<std::string>(named.begin(), named.end()), expected) << f->cause;
    EXPECT_EQ(named.size(), expected.size()) << f->cause;
  }
}

}  // namespace
}  // namespace llmwatch
