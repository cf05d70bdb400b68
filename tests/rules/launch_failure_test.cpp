// A run Slurm could not start (#30: lose less per interruption): its launch failed on a node,
// Slurm drained the node and holds the job. Judged from real Slurm 22.05 output, captured on
// the local cluster with a prolog that fails on node-1 (tests/fixtures/NOTICE.md).
#include "rules/launch_failure.h"

#include <gtest/gtest.h>

#include "policy/policy.h"
#include "rules/job_rules.h"
#include "slurm/slurm_text.h"
#include "test_util.h"

namespace llmwatch {
namespace {

SqueueParse held_queue() {
  return parse_squeue_json(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-launch-failed.json")));
}

SinfoParse drained_nodes() {
  return parse_sinfo_json(
      testing::read_file(testing::fixture("slurm-22.05.8/sinfo-prolog-error.json")));
}

const SlurmJob& job_3(const SqueueParse& q) {
  for (const auto& j : q.jobs)
    if (j.job_id == 3) return j;
  throw std::runtime_error("no job 3 in the fixture");
}

TEST(LaunchFailure, SlurmsJsonAndTextBothSayTheLaunchFailed) {
  auto q = held_queue();
  ASSERT_TRUE(q.ok()) << q.error;
  const SlurmJob& held = job_3(q);
  EXPECT_EQ(held.reason, "JobHeldUser");  // JSON: the words are beside the reason
  EXPECT_EQ(held.reason_detail, "launch failed requeued held");
  EXPECT_EQ(held.restarts, 1);
  EXPECT_TRUE(held.launch_failed());
  EXPECT_EQ(held.reason_shown(), "launch failed requeued held");  // as text squeue says it
  // Job 2 (cancelled) was pinned to node-1; 22.05 repeats its reason in the description.
  for (const auto& j : q.jobs)
    if (j.job_id == 2) {
      EXPECT_EQ(j.required_nodes, "node-1");
      EXPECT_FALSE(j.launch_failed());
      EXPECT_EQ(j.reason_shown(), "ReqNodeNotAvail, UnavailableNodes:node-1");
    }
  auto text = parse_squeue_text(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-launch-failed.txt")));
  ASSERT_TRUE(text.ok()) << text.error;
  int held_in_text = 0;
  for (const auto& j : text.jobs) {
    held_in_text += j.launch_failed();
    if (j.job_id == 3) {
      EXPECT_EQ(j.reason_shown(), held.reason_shown());
    }
  }
  EXPECT_EQ(held_in_text, 1);
  // A hold of llmwatch's own (a crash loop) or a person's is not a failed launch.
  SlurmJob held_by_someone = held;
  held_by_someone.reason_detail.clear();
  EXPECT_FALSE(held_by_someone.launch_failed());
}

// The defect: from squeue --json, a run whose launch failed was "stuck" with "reason
// JobHeldUser" (as if its owner held it), named no node, and waited for a person.
TEST(LaunchFailure, AHeldRunNamesTheNodeSlurmDrainedAndMayBeReleased) {
  auto q = held_queue();
  auto nodes = drained_nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.error;
  const SlurmJob& held = job_3(q);
  JobSettings job;
  job.name = "train-lf";
  JobObservation obs;
  obs.entries = {held};
  obs.launch_failure.drained = launch_failure_nodes(nodes.nodes, held);
  auto findings = evaluate_job(job, obs, 1'795'872'900);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, "launch-failed");
  EXPECT_EQ(f.severity, Severity::Critical);
  EXPECT_EQ(f.cause, kRelaunchable);
  EXPECT_NE(f.summary.find("launch failed on node-1"), std::string::npos) << f.summary;
  ASSERT_EQ(f.evidence.size(), 2u);
  EXPECT_EQ(f.evidence[1], "node-1 drained by Slurm at 2026-11-28T13:33:31Z: Prolog error");
  EXPECT_EQ(actions_for(f, job), (std::vector<std::string>{"relaunch", "alert"}));
}

TEST(LaunchFailure, OnlyNodesSlurmDrainedForAFailedLaunchAroundTheRequeue) {
  SlurmJob held;
  held.submit_time = 10'000;
  auto node = [](std::string name, std::string reason, std::int64_t at) {
    SlurmNode n;
    n.name = std::move(name);
    n.state = "idle";
    n.flags = {"DRAIN"};
    n.reason = std::move(reason);
    n.reason_at = at;
    return n;
  };
  std::vector<SlurmNode> nodes = {
      node("node-1", "Prolog error", 9'999),                 // this failure's
      node("node-2", "batch job complete failure", 10'030),  // slurmctld's words
      node("node-3", "Prolog error", 9'000),                 // an earlier failure's
      node("node-4", "llmwatch: Xid 79", 10'001),            // llmwatch's own drain
      node("node-5", "Kill task failed", 10'001),            // an end's, not a launch's
      node("node-6", "Prolog error", 0),                     // text sinfo: no time
      node("node-8", "Duplicate jobid", 10'001),             // after a slurmctld outage
  };
  SlurmNode back = node("node-7", "Prolog error", 10'002);
  back.flags.clear();  // resumed since: in service
  nodes.push_back(back);
  std::vector<std::string> names;
  for (const auto& n : launch_failure_nodes(nodes, held)) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"node-1", "node-2", "node-6", "node-8"}));
}

TEST(LaunchFailure, ReleasedOnlyWhereItThenStartsElsewhere) {
  SlurmJob held;
  held.job_id = 3;
  held.state = "PENDING";
  held.reason = "launch failed requeued held";  // text squeue
  JobSettings job;
  job.name = "tr";
  auto judged = [&](LaunchFailureContext c) {
    Finding f = launch_failed_finding("tr", held, c);
    return std::pair{f.cause, actions_for(f, job)};
  };
  const LaunchFailedNode node_1{"node-1", "Prolog error", 0};
  const std::vector<std::string> alert_only{"alert"};
  EXPECT_EQ(judged({true, {node_1}, {}, false}).first, kRelaunchable);
  // Slurm took no node out: releasing it may land where it failed.
  EXPECT_EQ(judged({true, {}, {}, false}).second, alert_only);
  // sinfo did not answer: not known, so nothing done.
  EXPECT_EQ(judged({false, {}, {}, false}).second, alert_only);
  // It must run on the drained node: released, it waits all the same.
  EXPECT_EQ(judged({true, {node_1}, {"node-1"}, false}).second, alert_only);
  // Released within the hour and failed again: two nodes in a row point at the job.
  auto again = launch_failed_finding("tr", held, {true, {node_1}, {}, true});
  EXPECT_EQ(actions_for(again, job), alert_only);
  EXPECT_NE(again.summary.find("failed again"), std::string::npos) << again.summary;
  // A site that wants only to be told.
  job.on_launch_failed = {"alert"};
  EXPECT_EQ(judged({true, {node_1}, {}, false}).second, alert_only);
}

// Each failure is an episode of its own: a requeue sets the submit time.
TEST(LaunchFailure, EachFailureIsItsOwnEpisode) {
  SlurmJob held;
  held.job_id = 3;
  held.state = "PENDING";
  held.reason = "launch failed requeued held";
  held.submit_time = 100;
  auto first = launch_failed_finding("tr", held, {});
  held.submit_time = 400;
  auto second = launch_failed_finding("tr", held, {});
  EXPECT_EQ(first.key, second.key);
  EXPECT_NE(first.episode, second.episode);
}

}  // namespace
}  // namespace llmwatch
