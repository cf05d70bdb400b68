#include "slurm/slurm_job.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

TEST(SqueueJson, ParsesTheRealSlurm2205Capture) {
  auto parsed =
      parse_squeue_json(testing::read_file(testing::fixture("slurm-22.05.8/squeue.json")));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.jobs.size(), 4u);
  const SlurmJob& task = parsed.jobs[0];
  EXPECT_EQ(task.display_id(), "3_1");
  EXPECT_EQ(task.job_id, 6);
  EXPECT_TRUE(task.running());
  EXPECT_EQ(task.nodes, "node-[1-2]");
  EXPECT_EQ(task.command, "/shared/project/train.slurm");
  EXPECT_EQ(task.group, "root");
  EXPECT_EQ(job_stdout_path(task), "/shared/project/my-training-3_1.out");
  const SlurmJob& rest = parsed.jobs[3];
  EXPECT_EQ(rest.display_id(), "3_[2-10%1]");
  EXPECT_TRUE(rest.pending());
  EXPECT_EQ(rest.reason, "JobArrayTaskLimit");
  EXPECT_EQ(rest.array_max_tasks, 1);
  EXPECT_EQ(rest.control_id(), "3_[2-10]");
  EXPECT_EQ(task.control_id(), "3_1");
  EXPECT_EQ(parsed.jobs[1].name, "llmwatch");
  EXPECT_EQ(parsed.jobs[1].reason, "BeginTime");
  EXPECT_EQ(parsed.jobs[1].display_id(), "4");
}

TEST(SqueueJson, GarbageIsAnErrorNotAnEmptyQueue) {
  EXPECT_FALSE(parse_squeue_json("").ok());
  EXPECT_FALSE(parse_squeue_json("squeue: error: Unable to contact slurm controller").ok());
  EXPECT_FALSE(parse_squeue_json("{\"meta\": {}}").ok());
  EXPECT_FALSE(parse_squeue_json("{\"jobs\": [").ok());
  auto empty = parse_squeue_json("{\"jobs\": []}");
  EXPECT_TRUE(empty.ok());
  EXPECT_TRUE(empty.jobs.empty());
}

// Captured with slurmctld stopped: squeue exits 0 with no jobs and an error entry.
TEST(SqueueJson, ControllerDownIsAnErrorNotAnEmptyQueue) {
  auto parsed = parse_squeue_json(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-ctld-down.json")));
  EXPECT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error,
            "Slurm reported an error: Failed while looking for jobs (slurm_load_jobs)");
}

TEST(SqueueJson, ToleratesNewerSlurmShapes) {
  // 23.02+: job_state is a list and numbers are {"set", "number"} objects.
  auto parsed = parse_squeue_json(R"({"jobs": [{"job_id": 7, "name": "x", "job_state": ["RUNNING"],
      "array_job_id": {"set": true, "number": 5}, "array_task_id": {"set": false, "number": 0},
      "start_time": {"set": true, "number": 1700000000}}]})");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed.jobs.size(), 1u);
  EXPECT_EQ(parsed.jobs[0].state, "RUNNING");
  EXPECT_EQ(parsed.jobs[0].array_job_id, 5);
  EXPECT_FALSE(parsed.jobs[0].array_task_id);
  EXPECT_EQ(parsed.jobs[0].start_time, 1700000000);
}

// The goodput ledger's GPUs are Slurm's allocation (#29): the gres/gpu of the task's TRES.
TEST(SlurmTres, TheGpusAreTheAllocatedGresGpuOrTheSumOfItsTypes) {
  EXPECT_EQ(gpus_in_tres("cpu=16,mem=64G,node=2,billing=16,gres/gpu=16"), 16);
  // Slurm lists a typed count beside the plain one: the plain one is the total.
  EXPECT_EQ(gpus_in_tres("cpu=8,gres/gpu=8,gres/gpu:h100=8"), 8);
  EXPECT_EQ(gpus_in_tres("cpu=8,gres/gpu:a100=4,gres/gpu:h100=4"), 8);
  EXPECT_EQ(gpus_in_tres("cpu=2,mem=2000M,node=2,billing=2"), 0);  // the local cluster's
  EXPECT_EQ(gpus_in_tres(""), 0);
  EXPECT_EQ(gpus_in_tres("gres/gpu=,gres/gpu=x8,gres/gpu=-1,gres/gpumem=80G,=3,gres/gpu"), 0);
  EXPECT_EQ(gpus_in_tres("gres/gpu=99999999999999999999"), 0);
}

// A JSON queue's task: what it was allocated; a pending one: what it asked for. The count is
// kept across the stored copy of the task (a restart after the job left the queue).
TEST(SlurmTres, TheJsonQueueGivesEachTaskItsGpusAndTheStoredCopyKeepsThem) {
  auto text = testing::read_file(testing::fixture("slurm-22.05.8/squeue.json"));
  auto at = text.find("\"tres_alloc_str\": \"cpu=2,node=2,billing=2\"");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + std::string("\"tres_alloc_str\": \"cpu=2,node=2,billing=2").size(),
              ",gres/gpu=16");
  auto parsed = parse_squeue_json(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  int with_gpus = 0;
  for (const auto& j : parsed.jobs)
    if (j.gpus == 16) {
      ++with_gpus;
      auto back = slurm_job_from_json(slurm_job_to_json(j));
      ASSERT_TRUE(back);
      EXPECT_EQ(back->gpus, 16);
    }
  EXPECT_EQ(with_gpus, 1);
  auto pending = parse_squeue_json(R"({"jobs": [{"job_id": 9, "name": "x", "job_state": "PENDING",
      "tres_alloc_str": "", "tres_req_str": "cpu=4,node=4,billing=4,gres/gpu=32"}]})");
  ASSERT_EQ(pending.jobs.size(), 1u);
  EXPECT_EQ(pending.jobs[0].gpus, 32);
}

TEST(SlurmPattern, ExpandsEveryPlaceholder) {
  SlurmJob j;
  j.job_id = 42;
  j.array_job_id = 40;
  j.array_task_id = 2;
  j.name = "tr11";
  j.user = "alice";
  j.batch_host = "gpu017";
  EXPECT_EQ(expand_slurm_pattern("/l/%x-%A_%a.%j.%u.%N.log", j),
            "/l/tr11-40_2.42.alice.gpu017.log");
  EXPECT_EQ(expand_slurm_pattern("%4a-%%-%q", j), "0002-%-%q");
  EXPECT_EQ(expand_slurm_pattern("trailing%", j), "trailing%");
  SlurmJob single;
  single.job_id = 9;
  single.workdir = "/w";
  EXPECT_EQ(job_stdout_path(single), "/w/slurm-9.out");
}

// The defect: "%3000000000j" overflowed the width (undefined behaviour) and asked for gigabytes
// of padding. Slurm pads to at most 10 digits; so do we.
TEST(SlurmPattern, AHugeWidthIsCappedLikeSlurmDoes) {
  SlurmJob j;
  j.job_id = 42;
  EXPECT_EQ(expand_slurm_pattern("%3000000000j", j), "0000000042");
  EXPECT_EQ(expand_slurm_pattern("%99999999999999999999999j.out", j), "0000000042.out");
}

}  // namespace
}  // namespace llmwatch

#include "slurm/slurm_node.h"

namespace llmwatch {
namespace {

TEST(SinfoJson, ParsesTheRealCaptureWithDrainFlagsAndReasons) {
  auto parsed = parse_sinfo_json(testing::read_file(testing::fixture("slurm-22.05.8/sinfo.json")));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ASSERT_EQ(parsed.nodes.size(), 4u);
  EXPECT_EQ(parsed.nodes[0].name, "node-1");
  EXPECT_FALSE(parsed.nodes[0].unusable());
  EXPECT_TRUE(parsed.nodes[2].down());
  EXPECT_EQ(parsed.nodes[2].reason, "Kill task failed");
  EXPECT_TRUE(parsed.nodes[3].drained());
  EXPECT_EQ(parsed.nodes[3].describe(), "idle+DRAIN");
  EXPECT_EQ(parsed.nodes[3].reason_set_by, "root");
  EXPECT_EQ(parsed.nodes[0].address, "127.0.0.1");
}

TEST(SinfoJson, NewerListStateAndErrorsAndGarbage) {
  auto parsed =
      parse_sinfo_json(R"({"nodes": [{"name": "n1", "state": ["IDLE", "DRAIN"]}], "errors": []})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.nodes[0].state, "idle");
  EXPECT_TRUE(parsed.nodes[0].drained());
  EXPECT_FALSE(parse_sinfo_json(R"({"nodes": [], "errors": [{"description": "x"}]})").ok());
  EXPECT_FALSE(parse_sinfo_json("sinfo: error").ok());
}

// A step or a resubmission on the owner's behalf runs in the task's own group, never in root's
// for another user: `sbatch --uid` alone left restarted runs in GroupId=root(0).
TEST(OwnerGroup, TheTasksOwnGroupElseTheOwnersPrimaryNeverRootsForAnotherUser) {
  SlurmJob t;
  t.user = "root";
  t.group = "root";
  EXPECT_EQ(owner_group(t), "root");
  t.group = "";
  EXPECT_EQ(owner_group(t), "0");  // root's primary group, from the passwd file
  t.user = "no-such-user-llmwatch";
  t.group = "trainers";
  EXPECT_EQ(owner_group(t), "trainers");
  t.group = "root";  // a run an older llmwatch restarted with --uid alone
  EXPECT_EQ(owner_group(t), "");
  t.group = "";
  EXPECT_EQ(owner_group(t), "");
}

// The identity every step or resubmission into a user's job takes, as root: the owner and the
// task's group, or a refusal; nothing when llmwatch is not root or the job is root's own.
TEST(OwnerGroup, TheIdentityArgsAreTheOwnerAndGroupOrARefusal) {
  SlurmJob t;
  t.job_id = 7;
  t.user = "root";
  EXPECT_TRUE(owner_identity_args(t)->empty());
  t.user = "no-such-user-llmwatch";
  t.group = "trainers";
  auto args = owner_identity_args(t);
  if (!running_as_root()) {
    EXPECT_TRUE(args->empty());
    return;
  }
  EXPECT_EQ(*args, (std::vector<std::string>{"--uid=no-such-user-llmwatch", "--gid=trainers"}));
  t.group = "root";  // and no passwd entry: the group is unknown
  EXPECT_NE(owner_identity_args(t).error().find("group of 7's owner"), std::string::npos);
  t.user = "";
  EXPECT_NE(owner_identity_args(t).error().find("owner of 7 is unknown"), std::string::npos);
}

TEST(SlurmJobJson, RoundTripsForTheRestartAction) {
  auto parsed =
      parse_squeue_json(testing::read_file(testing::fixture("slurm-22.05.8/squeue.json")));
  ASSERT_TRUE(parsed.ok());
  auto back = slurm_job_from_json(slurm_job_to_json(parsed.jobs[0]));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->display_id(), "3_1");
  EXPECT_EQ(back->command, parsed.jobs[0].command);
  EXPECT_EQ(back->node_count, 2);
  EXPECT_EQ(back->group, parsed.jobs[0].group);
  EXPECT_FALSE(slurm_job_from_json("garbage"));
}

// What a task excludes itself (sbatch --exclude), which a restart keeps: none ("") is known as
// much as a list is; the stored copy keeps both; squeue's text does not say (unknown).
TEST(SlurmJobJson, KeepsWhatATaskExcludesItselfAndWhetherThatIsKnown) {
  auto text = testing::read_file(testing::fixture("slurm-22.05.8/squeue.json"));
  auto none = parse_squeue_json(text);
  ASSERT_TRUE(none.ok() && !none.jobs.empty());
  EXPECT_EQ(none.jobs[0].excluded_nodes, std::optional<std::string>(""));
  auto at = text.find("\"excluded_nodes\": \"\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("\"excluded_nodes\": \"\"").size(),
               "\"excluded_nodes\": \"node-[2-3]\"");
  auto listed = parse_squeue_json(text);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed.jobs[0].excluded_nodes, std::optional<std::string>("node-[2-3]"));
  auto back = slurm_job_from_json(slurm_job_to_json(listed.jobs[0]));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->excluded_nodes, std::optional<std::string>("node-[2-3]"));
  SlurmJob from_text;  // squeue's text: not said
  from_text.job_id = 4;
  back = slurm_job_from_json(slurm_job_to_json(from_text));
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->excluded_nodes);
}

}  // namespace
}  // namespace llmwatch
