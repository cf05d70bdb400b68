// requeue (`scontrol requeue`) keeps the job id: Slurm starts the same id again. Each start is
// a task of its own, so a task that hangs again after its requeue is requeued again, and every
// requeue is a restart in the budgets (the cluster's hourly one and the job's max_restarts).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cycle/phases.h"
#include "job/kept_log.h"
#include "phase_fixture.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;
using testing::read_file;
using testing::write_file;

constexpr double kNow = 1'700'000'600;

// One hang of task 42 started at `started`, as the checks would leave it; runs the act phase.
void hang_of(PhaseFixture& p, double now, std::int64_t started) {
  auto s = p.state(now);
  auto& w = p.watch(s, "tr", 42);
  w.obs.running->start_time = started;
  w.obs.entries = {*w.obs.running};
  s.findings = {make_finding("job:tr", "tr", "hung", Severity::Critical, "no step for 20m")};
  act_phase(s);
}

int requeues(const PhaseFixture& p) {
  return static_cast<int>(
      std::count(p.slurm.controls.begin(), p.slurm.controls.end(), std::string("requeue 42")));
}

// The defect: the journal keyed a requeue by the job id alone, so the same id, started again
// by the requeue and hung again, was never requeued again (the key was taken): a hung run
// left hanging with nothing said.
TEST(RequeueAction, ATaskThatHangsAgainAfterItsRequeueIsRequeuedAgain) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  hang_of(p, kNow, 1'700'000'000);
  hang_of(p, kNow + 30, 1'700'000'000);  // the same task, still listed: not twice
  EXPECT_EQ(requeues(p), 1);
  hang_of(p, kNow + 900, 1'700'000'300);  // requeued, started again, hung again
  EXPECT_EQ(requeues(p), 2);
}

// The same cause for every action (#26 B): dump, cancel and restart keyed a task by its id
// alone, so a requeued task that hung again was not cancelled again, silently. Every key now
// names the task by its id and start (task_identity).
TEST(RequeueAction, ATaskThatHangsAgainAfterItsRequeueIsCancelledAgain) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"cancel\"]\n");
  hang_of(p, kNow, 1'700'000'000);
  hang_of(p, kNow + 30, 1'700'000'000);
  EXPECT_EQ(p.slurm.cancelled.size(), 1u);
  hang_of(p, kNow + 900, 1'700'000'300);
  EXPECT_EQ(p.slurm.cancelled.size(), 2u) << p.events();
}

// The defect: requeue counted against no budget, so a job that hangs after every start was
// requeued without end, where a restart stops at max_restarts and asks for a human.
TEST(RequeueAction, RequeuesCountAgainstTheJobsRestartBudget) {
  PhaseFixture p(
      "[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\nmax_restarts = 2\n"
      "restart_window = \"6h\"\n");
  for (int i = 0; i < 3; ++i) hang_of(p, kNow + 600 * i, 1'700'000'000 + 600 * i);
  EXPECT_EQ(requeues(p), 2);
  EXPECT_NE(p.events().find("max_restarts (2 per 6h) reached for tr"), std::string::npos)
      << p.events();
}

// #30, "never land on a bad node again": a requeued task started again on any node Slurm
// picked, one out of service or the ledger's repeat offender too, where a restart would have
// excluded them. Pending again after the requeue, it is kept off them, and off its own list.
TEST(RequeueAction, ARequeuedTaskIsKeptOffTheNodesARestartWouldExclude) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  for (int i = 0; i < 2; ++i)
    p.store->add_incident(kNow - 3600 + i, "node-3", "5@" + std::to_string(i),
                          "tr crashed, attributed to node-3");
  auto s = p.state(kNow);
  s.unusable = {"node-2"};
  auto& w = p.watch(s, "tr", 42);
  w.obs.running->excluded_nodes = "node-9";
  w.obs.entries = {*w.obs.running};
  p.slurm.jobs = w.obs.entries;
  s.findings = {make_finding("job:tr", "tr", "hung", Severity::Critical, "no step for 20m")};
  act_phase(s);
  EXPECT_EQ(requeues(p), 1);
  EXPECT_EQ(p.slurm.exclusions_set, std::vector<std::string>{"42 node-[2-3,9]"}) << p.events();
  EXPECT_NE(p.events().find("excluding node-[2-3,9]"), std::string::npos) << p.events();
}

}  // namespace
}  // namespace llmwatch

namespace llmwatch {
namespace {

// Task 40_(1+i) of a throttled array (--array=1-9%1) runs, its next tasks pending behind it.
JobWork& array_task(testing::PhaseFixture& p, CycleState& s, int i) {
  auto& w = p.watch(s, "tr", 42 + i);
  w.obs.running->array_job_id = 40;
  w.obs.running->array_task_id = 1 + i;
  w.obs.running->start_time = 1'700'000'000 + 600 * i;
  SlurmJob rest = *w.obs.running;
  rest.state = "PENDING";
  rest.array_task_id.reset();
  rest.array_task_string = std::to_string(2 + i) + "-9%1";
  w.obs.entries = {*w.obs.running, rest};
  return w;
}

// A throttled array's next task starts by itself when a hung one is cancelled: a restart the
// budget refused still happens. The refusal said "needs a human" alone, and the soak's hung
// array went on task after task beside it; it now says so, and how to stop it.
TEST(RequeueAction, ARefusedRestartOfAnArrayThatGoesOnByItselfSaysSo) {
  testing::PhaseFixture p(
      "[[job]]\nname = \"tr\"\non_hang = [\"cancel\", \"restart\"]\nmax_restarts = 1\n"
      "restart_window = \"6h\"\n");
  for (int i = 0; i < 2; ++i) {
    auto s = p.state(kNow + 600 * i);
    array_task(p, s, i);
    s.findings = {make_finding("job:tr", "tr", "hung", Severity::Critical, "no step for 20m")};
    act_phase(s);
  }
  EXPECT_NE(
      p.events().find("max_restarts (1 per 6h) reached for tr; needs a human, but the next "
                      "task of array 40_[3-9%1] starts by itself (llmwatch hold tr stops it)"),
      std::string::npos)
      << p.events();
}

// The same array's task crashed (the plan has no cancel): a restart the budget refuses still
// keeps the next task, which Slurm starts anyway, off the nodes a restart would exclude (here
// the ledger's node-3, held with two incidents). Before, the refusal set no list and the next
// task started wherever Slurm put it, node-3 too. Not in a dry run.
TEST(RequeueAction, ARefusedRestartStillKeepsAnArraysNextTaskOffBadNodes) {
  for (bool dry : {false, true}) {
    testing::PhaseFixture p(
        "[[job]]\nname = \"tr\"\non_crash = [\"restart\"]\nmax_restarts = 1\n"
        "restart_window = \"6h\"\n",
        dry ? "dry_run = true\n" : "");
    for (int i = 0; i < 2; ++i)
      p.store->add_incident(kNow - 3600 + i, "node-3", "5@" + std::to_string(i), "crash");
    for (int i = 0; i < 2; ++i) {
      auto s = p.state(kNow + 600 * i);
      array_task(p, s, i).obs.entries.back().excluded_nodes = "";
      s.findings = {make_finding("job:tr", "tr", "crashed", Severity::Critical, "CUDA error")};
      s.findings.back().episode = std::to_string(i);
      act_phase(s);
    }
    if (dry) {
      EXPECT_TRUE(p.slurm.exclusions_set.empty()) << p.events();
      continue;
    }
    EXPECT_NE(p.events().find("max_restarts (1 per 6h) reached for tr"), std::string::npos)
        << p.events();
    EXPECT_EQ(p.slurm.exclusions_set,
              (std::vector<std::string>{"40_[2-9] node-3", "40_[3-9] node-3"}))
        << p.events();
  }
}

// A requeue of `log`'s task, run as its owner `user`, at kNow; the journal's line of it.
std::string requeue_logging_to(PhaseFixture& p, const std::string& log, const std::string& user,
                               const std::string& err = "") {
  auto s = p.state(kNow);
  auto& w = p.watch(s, "tr", 42);
  w.obs.running->std_out = log;
  w.obs.running->std_err = err;
  w.obs.running->user = user;
  w.obs.entries = {*w.obs.running};
  s.findings = {make_finding("job:tr", "tr", "hung", Severity::Critical, "no step for 20m")};
  act_phase(s);
  return p.events();
}

// The defect (stop 66, on the local cluster): the requeued task keeps its id and so its log,
// and Slurm empties that file when it starts the task again: the hung run's last lines, the
// evidence of why it was requeued, were lost. They are kept before the requeue now.
TEST(RequeueAction, TheHungRunsLogIsKeptBeforeSlurmEmptiesIt) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  const std::string log = p.dir / "train.out";
  write_file(log, "step 7\n[rank3] heartbeat: still waiting in ALLREDUCE\n");
  std::string events = requeue_logging_to(p, log, current_user_name());
  EXPECT_EQ(requeues(p), 1);
  const std::string copy = p.dir / "state/requeued-logs/42-1700000000.log";
  EXPECT_EQ(read_file(copy), "step 7\n[rank3] heartbeat: still waiting in ALLREDUCE\n");
  EXPECT_NE(events.find("kept in " + copy), std::string::npos) << events;
  struct stat st {};
  ASSERT_EQ(::stat(copy.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "it holds what the job's owner wrote";
}

// --error to a file of its own is emptied by the same restart: kept beside it. One that names
// StdOut's file (squeue's JSON gives StdOut's where --error was not given) is kept once.
TEST(RequeueAction, AnErrorLogOfItsOwnIsKeptToo) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  const std::string log = p.dir / "train.out", err = p.dir / "train.err";
  write_file(log, "step 7\n");
  write_file(err, "NCCL WARN Got completion from peer 10.0.0.3 with error 12\n");
  std::string events = requeue_logging_to(p, log, current_user_name(), err);
  EXPECT_EQ(read_file(p.dir / "state/requeued-logs/42-1700000000.err.log"),
            "NCCL WARN Got completion from peer 10.0.0.3 with error 12\n");
  EXPECT_EQ(read_file(p.dir / "state/requeued-logs/42-1700000000.log"), "step 7\n");
  EXPECT_NE(events.find("its error log's last"), std::string::npos) << events;
  PhaseFixture q("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  const std::string same = q.dir / "train.out";
  write_file(same, "step 7\n");
  events = requeue_logging_to(q, same, current_user_name(), same);
  EXPECT_EQ(events.find("its error log"), std::string::npos) << events;
  EXPECT_FALSE(std::filesystem::exists(q.dir / "state/requeued-logs/42-1700000000.err.log"));
}

// <state_dir>/logs holds the self job's own logs (llmwatch-%j.out, pruned by age): the kept
// copies went there at first, and keeping the newest of them removed the self job's oldest.
TEST(RequeueAction, TheSelfJobsOwnLogsAreNotPrunedWithTheKeptCopies) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  std::filesystem::create_directories(p.dir / "state/logs");
  for (size_t i = 0; i <= kKeptLogs; ++i)
    write_file(p.dir / ("state/logs/llmwatch-" + std::to_string(i) + ".out"), "cycle done\n");
  const std::string log = p.dir / "train.out";
  write_file(log, "step 7\n");
  requeue_logging_to(p, log, current_user_name());
  size_t own = 0;
  for (const auto& e : std::filesystem::directory_iterator(p.dir / "state/logs"))
    own += e.path().extension() == ".out";
  EXPECT_EQ(own, kKeptLogs + 1);
  EXPECT_EQ(read_file(p.dir / "state/requeued-logs/42-1700000000.log"), "step 7\n");
}

// A long log is kept by its end, where the hang is: never the whole of a 10 GiB file.
TEST(RequeueAction, OnlyTheEndOfALongLogIsKept) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  const std::string log = p.dir / "train.out";
  write_file(log, std::string(kKeptLogBytes, 'a') + "the last line\n");
  requeue_logging_to(p, log, current_user_name());
  std::string kept = read_file(p.dir / "state/requeued-logs/42-1700000000.log");
  EXPECT_EQ(kept.size(), kKeptLogBytes);
  EXPECT_TRUE(kept.ends_with("the last line\n"));
}

// The owner names the path and llmwatch may read as root: a symlink is not followed, and a
// file the owner does not own is not copied. The requeue happens all the same.
TEST(RequeueAction, ALogThatIsNotTheOwnersOwnFileIsNotCopied) {
  PhaseFixture p("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
  const std::string secret = p.dir / "secret";
  write_file(secret, "not the job's\n");
  const std::string link = p.dir / "train.out";
  ASSERT_EQ(::symlink(secret.c_str(), link.c_str()), 0);
  std::string events = requeue_logging_to(p, link, current_user_name());
  EXPECT_EQ(requeues(p), 1);
  EXPECT_NE(events.find("its log not kept: " + link), std::string::npos) << events;
  EXPECT_FALSE(std::filesystem::exists(p.dir / "state/requeued-logs/42-1700000000.log"));
  if (running_as_root() && lookup_user("nobody")) {
    PhaseFixture q("[[job]]\nname = \"tr\"\non_hang = [\"requeue\"]\n");
    const std::string log = q.dir / "train.out";
    write_file(log, "root's\n");
    events = requeue_logging_to(q, log, "nobody");
    EXPECT_NE(events.find("not owned by the job's owner"), std::string::npos) << events;
    EXPECT_FALSE(std::filesystem::exists(q.dir / "state/requeued-logs/42-1700000000.log"));
  }
}

}  // namespace
}  // namespace llmwatch
