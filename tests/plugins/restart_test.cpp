#include <gtest/gtest.h>

#include <algorithm>

#include "job/exclusions.h"
#include "registry.h"
#include "rules/queued_restart.h"
#include "slurm/script_file.h"
#include "slurm/slurm_text.h"
#include "store/kept_script.h"
#include "store/keys.h"
#include "store/store.h"
#include "test_util.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

SlurmJob task(int array, int id, const std::string& state) {
  SlurmJob j;
  j.job_id = array * 10 + id;
  j.array_job_id = array;
  j.array_task_id = id;
  j.state = state;
  j.name = "tr";
  j.user = current_user_name();
  j.excluded_nodes = "";  // as squeue --json lists none
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
  EXPECT_EQ(out.state, ActionState::Done);
  EXPECT_EQ(out.detail, "next task of array 3_2 starts by itself");
  EXPECT_EQ(slurm.calls(), 0);
  // Another array's pending task is not this one's next task, but it is a live task of the
  // run: the restart waits, never submits a second run beside it (#26.1).
  r.queue = {*r.task, task(4, 2, "PENDING")};
  r.task->command = "/train.sh";
  out = find_action("restart")->execute(r, ctx);
  EXPECT_EQ(out.state, ActionState::Waiting) << out.detail;
  EXPECT_EQ(out.detail, "3_1 of tr is RUNNING: the restart waits for its end");
  EXPECT_EQ(slurm.calls(), 0);
  // Once nothing of the run is left, the resubmission is attempted (and fails here).
  r.queue.clear();
  out = find_action("restart")->execute(r, ctx);
  EXPECT_EQ(out.state, ActionState::Failed);
  EXPECT_EQ(slurm.calls(), 1);
}

// Records what would be submitted instead of submitting it.
class RecordingSlurm : public SlurmClient {
 public:
  RecordingSlurm() : SlurmClient(SlurmSettings{}) {}
  SubmitResult submit(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env, bool own_job) override {
    submitted.push_back(args);
    envs.push_back(env);
    inherited.push_back(own_job);
    scripts_read.push_back(testing::read_file(args.back()));  // the script, as sbatch read it
    if (fail_submit) return {std::nullopt, "sbatch: error: Batch job submission failed"};
    return {42, ""};
  }
  std::vector<std::string> scripts_read;
  bool fail_submit = false;
  // `scontrol write batch_script`: Slurm has forgotten every task.
  int scripts_asked = 0;
  Result<std::string> batch_script(const std::string& id) override {
    ++scripts_asked;
    return Error{"scontrol write batch_script " + id + ": no script (Invalid job id specified?)"};
  }
  // What `scontrol show job` answers, by id (absent: Slurm forgot it).
  std::map<std::string, std::map<std::string, std::string>> shown;
  std::map<std::string, std::string> show_job(const std::string& id) override {
    ++shows;
    auto it = shown.find(id);
    return it == shown.end() ? std::map<std::string, std::string>{} : it->second;
  }
  int shows = 0;
  std::vector<std::string> exclusions_set;  // "ID NODES" of each `scontrol update`
  Status set_excluded_nodes(const std::string& id, const std::string& nodes) override {
    exclusions_set.push_back(id + " " + nodes);
    return {};
  }
  std::vector<std::vector<std::string>> submitted;
  std::vector<std::map<std::string, std::string>> envs;
  std::vector<bool> inherited;
};

bool has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

// The defect: a restart resubmitted another user's batch script as llmwatch's user (root under
// the systemd unit), with llmwatch's environment (its Slack URL and SMTP password) exported.
// A restart of task 3_1 of `user`, recorded instead of submitted.
struct RecordedRestart {
  testing::TempDir dir;
  Store store{dir.path};
  Config config;
  RecordingSlurm slurm;
  ActionContext ctx{config, slurm, store, 0};
  ActionOutcome run(const std::string& user, const std::string& group = "trainers") {
    ActionRequest r;
    r.job = "tr";
    r.task = task(3, 1, "RUNNING");
    r.task->command = "/home/alice/train.sh";
    r.task->user = user;
    r.task->group = group;
    return find_action("restart")->execute(r, ctx);
  }
};

TEST(RestartAction, ResubmitsAsTheOwnerWithNoneOfLlmwatchsEnvironment) {
  RecordedRestart t;
  auto& slurm = t.slurm;
  auto out = t.run(running_as_root() ? "alice" : current_user_name());
  ASSERT_EQ(out.state, ActionState::Done) << out.detail;
  ASSERT_EQ(slurm.submitted.size(), 1u);
  const auto& args = slurm.submitted[0];
  EXPECT_TRUE(has(args, "--export=NONE"));
  EXPECT_FALSE(slurm.inherited[0]);  // a scrubbed environment for sbatch itself
  EXPECT_TRUE(slurm.envs[0].empty());
  if (running_as_root()) {
    EXPECT_TRUE(has(args, "--uid=alice"));
    // The defect: --uid alone kept root's group, so the run had root's group rights.
    EXPECT_TRUE(has(args, "--gid=trainers"));
  }
  for (const auto& a : args) EXPECT_EQ(a.rfind("--export=ALL", 0), std::string::npos) << a;
}

// A --wrap run restarted after Slurm forgot it (MinJobAge): before, "Slurm's copy of it cannot
// be had" and the run waited for a person. The copy kept while it ran is resubmitted, and only
// that task's: a kept copy of another run (the same id requeued) is never taken for it.
TEST(RestartAction, AWrapRunSlurmForgotIsResubmittedFromTheCopyKeptWhileItRan) {
  RecordedRestart t;
  t.config.state_dir = t.dir.path;
  ActionRequest r;
  r.job = "tr";
  r.task = task(3, 1, "FAILED");
  r.task->command = "(null)";
  r.task->user = running_as_root() ? "alice" : current_user_name();
  r.task->group = "trainers";
  r.task->start_time = 1700000000;
  const std::string script = "#!/bin/bash\nexec python3 train.py\n";
  SlurmJob other_run = *r.task;
  other_run.start_time -= 600;
  put_kept_script(t.store, "tr", {other_run.run_key(), ""}, 0);
  ASSERT_TRUE(write_script_copy(t.dir.path, kept_script_path(t.dir.path, other_run.run_key()),
                                "#!/bin/sh\n"));
  auto out = find_action("restart")->execute(r, t.ctx);
  EXPECT_EQ(out.state, ActionState::Failed);
  EXPECT_NE(out.detail.find("none was kept when it ran"), std::string::npos) << out.detail;
  EXPECT_TRUE(t.slurm.submitted.empty());
  put_kept_script(t.store, "tr", {r.task->run_key(), ""}, 0);
  const std::string kept = kept_script_path(t.dir.path, r.task->run_key());
  ASSERT_TRUE(write_script_copy(t.dir.path, kept, script));
  // sbatch fails: the kept copy stays for the next try.
  t.slurm.fail_submit = true;
  out = find_action("restart")->execute(r, t.ctx);
  EXPECT_EQ(out.state, ActionState::Failed);
  EXPECT_TRUE(std::filesystem::exists(kept));
  t.slurm.fail_submit = false;
  out = find_action("restart")->execute(r, t.ctx);
  ASSERT_EQ(out.state, ActionState::Done) << out.detail;
  EXPECT_NE(out.detail.find("(kept while it ran)"), std::string::npos) << out.detail;
  ASSERT_EQ(t.slurm.scripts_read.size(), 2u);
  EXPECT_EQ(t.slurm.scripts_read[1], script);
  EXPECT_EQ(t.slurm.scripts_asked, 1);  // only while no copy of this run was kept
  // The copy is gone once sbatch has taken it.
  EXPECT_FALSE(std::filesystem::exists(kept));
}

TEST(RestartAction, NeverSubmitsForAnUnknownOrForeignOwner) {
  RecordedRestart t;
  // As root an unknown owner is refused; as a user, someone else's job is.
  auto out = t.run(running_as_root() ? "" : "someone-else");
  EXPECT_EQ(out.state, ActionState::Failed);
  EXPECT_TRUE(t.slurm.submitted.empty());
  if (running_as_root()) {
    // An owner whose group is unknown (no passwd entry, Slurm said group root) is refused too.
    auto rootgroup = t.run("no-such-user-llmwatch", "root");
    EXPECT_EQ(rootgroup.state, ActionState::Failed) << rootgroup.detail;
    EXPECT_NE(rootgroup.detail.find("group"), std::string::npos) << rootgroup.detail;
    EXPECT_TRUE(t.slurm.submitted.empty());
  }
}

// A restart of job 7 (no array), running /train.sh.
ActionRequest request_for_job_7(const std::string& state) {
  ActionRequest r;
  r.job = "tr";
  r.task = task(0, 7, state);
  r.task->array_job_id = 0;
  r.task->array_task_id.reset();
  r.task->command = "/train.sh";
  return r;
}

// Queued behind the dying task (rules/queued_restart.h): only that task itself, as the request
// names it (its start too: a requeue keeps the id), and only when asked. Any other live task of
// the run keeps the restart waiting, as always.
TEST(RestartAction, IsQueuedBehindOnlyTheDyingTaskItself) {
  RecordedRestart t;
  ActionRequest r = request_for_job_7("RUNNING");
  r.task->start_time = 1'799'999'000;
  r.queue = {*r.task};
  auto& restart = *find_action("restart");
  EXPECT_EQ(restart.execute(r, t.ctx).state, ActionState::Waiting) << "not asked";
  r.queue_behind = true;
  SlurmJob requeued = *r.task;
  requeued.start_time += 60;
  r.queue = {requeued};
  EXPECT_EQ(restart.execute(r, t.ctx).state, ActionState::Waiting) << "another start of 7";
  SlurmJob other = *r.task;
  other.job_id = 9;
  r.queue = {*r.task, other};
  EXPECT_EQ(restart.execute(r, t.ctx).state, ActionState::Waiting) << "another task of the run";
  EXPECT_TRUE(t.slurm.submitted.empty());
  r.queue = {*r.task};
  auto out = restart.execute(r, t.ctx);
  ASSERT_EQ(out.state, ActionState::Done) << out.detail;
  EXPECT_EQ(out.detail, "queued /train.sh as job 42, to start once 7 is gone");
  ASSERT_EQ(t.slurm.submitted.size(), 1u);
  EXPECT_TRUE(has(t.slurm.submitted[0], "--dependency=afternotok:7"));
  EXPECT_TRUE(has(t.slurm.submitted[0], "--kill-on-invalid-dep=yes"));
  auto kept = QueuedRestart::from_text(t.store.get(kv::queued_restart("tr")).value_or(""));
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->successor, "42");
  EXPECT_EQ(kept->after_task, "7");
  EXPECT_EQ(kept->after_start, 1'799'999'000);
  // Once the task is gone, a restart is a plain resubmission.
  r.queue.clear();
  out = restart.execute(r, t.ctx);
  EXPECT_EQ(out.detail, "resubmitted /train.sh as job 42");
  EXPECT_FALSE(has(t.slurm.submitted[1], "--dependency=afternotok:7"));
}

// The defect: a run its owner submitted with --exclude was resubmitted without it, and could
// start where its owner said never to run. Its own exclusions now come with the cycle's, from
// squeue --json; from scontrol where squeue's text does not say; the cycle's alone where
// Slurm forgot the task.
TEST(RestartAction, KeepsTheNodesTheRunExcludedItself) {
  RecordedRestart t;
  ActionRequest r = request_for_job_7("COMPLETED");
  r.task->excluded_nodes = "node-[4-5]";
  r.exclude = {"node-1", "node-5"};
  auto& restart = *find_action("restart");
  auto out = restart.execute(r, t.ctx);
  ASSERT_EQ(out.state, ActionState::Done) << out.detail;
  EXPECT_TRUE(has(t.slurm.submitted.back(), "--exclude=node-[1,4-5]")) << out.detail;
  EXPECT_EQ(t.slurm.shows, 0) << "squeue --json said";

  r.task->excluded_nodes.reset();  // squeue's text
  t.slurm.shown["7"] = {{"ExcNodeList", "node-9"}};
  restart.execute(r, t.ctx);
  EXPECT_TRUE(has(t.slurm.submitted.back(), "--exclude=node-[1,5,9]"));
  t.slurm.shown["7"] = {{"ExcNodeList", "(null)"}};  // scontrol's word for none
  restart.execute(r, t.ctx);
  EXPECT_TRUE(has(t.slurm.submitted.back(), "--exclude=node-[1,5]"));
  t.slurm.shown.clear();
  restart.execute(r, t.ctx);
  EXPECT_TRUE(has(t.slurm.submitted.back(), "--exclude=node-[1,5]"));
  r.task->excluded_nodes = "node-[3-";  // unreadable: not lost, though not merged either
  auto ex = exclusions_for(*r.task, r.exclude, t.slurm);
  EXPECT_FALSE(ex.own_known);
}

// The defect: an array throttled with %1 restarts by itself, and its next task started on any
// node Slurm picked, the crash's culprit and the ledger's suspects too: only a resubmission
// excluded them. Its pending tasks are now kept off them. Captured: array 1 submitted with
// --array=1-4%1, its pending tasks given ExcNodeList=node-[1-2], as squeue's text and scontrol
// show them (scontrol takes no remainder's id: it shows the remainder under the array's).
TEST(RestartAction, AnArraysNextTaskIsKeptOffTheNodesAResubmissionWouldExclude) {
  auto queue = parse_squeue_text(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-array-excluded.txt")));
  ASSERT_TRUE(queue.ok()) << queue.error;
  RecordedRestart t;
  ActionRequest r;
  r.job = "arr";
  for (const auto& j : queue.jobs) {
    if (j.display_id() == "1_2") r.task = j;
    if (j.present()) r.queue.push_back(j);
  }
  ASSERT_TRUE(r.task);
  r.exclude = {"node-4"};
  auto shown = parse_scontrol_show(
      testing::read_file(testing::fixture("slurm-22.05.8/scontrol-show-job-array.txt")));
  ASSERT_FALSE(shown.empty());
  t.slurm.shown["1"] = shown[0];
  auto& restart = *find_action("restart");
  auto out = restart.execute(r, t.ctx);
  EXPECT_EQ(out.state, ActionState::Done);
  EXPECT_EQ(out.detail, "next task of array 1_[3-4%1] starts by itself, excluding node-[1-2,4]");
  EXPECT_EQ(t.slurm.exclusions_set, std::vector<std::string>{"1_[3-4] node-[1-2,4]"});
  EXPECT_TRUE(t.slurm.submitted.empty());
  // Another record (not the remainder's) says nothing of it: no list is set over its own.
  t.slurm.shown["1"]["ArrayTaskId"] = "2";
  out = restart.execute(r, t.ctx);
  EXPECT_EQ(t.slurm.exclusions_set.size(), 1u) << out.detail;
  EXPECT_NE(out.detail.find("excludes itself is unknown"), std::string::npos) << out.detail;
}

}  // namespace
}  // namespace llmwatch
