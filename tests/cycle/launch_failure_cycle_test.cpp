// A run Slurm could not start, through whole cycles of the real Supervisor (#30): its
// restart's launch failed on node-1, which Slurm drained, and Slurm holds it. llmwatch releases
// it once, so it starts elsewhere; a second failure within the hour is only told.
#include <gtest/gtest.h>

#include <algorithm>

#include "ending_run.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_node.h"
#include "slurm/slurm_text.h"
#include "store_reading.h"

namespace llmwatch {
namespace {

using testing::EndingRun;
using testing::event_lines;

struct HeldRun : EndingRun {
  HeldRun() { idle_nodes(4); }
  // Task 7 held after its launch failed on `node`, requeued at `at`; `node` drained then.
  void launch_fails_on(const std::string& node, std::int64_t at,
                       const std::string& reason = "Prolog error") {
    SlurmJob held = task("PENDING");
    held.nodes.clear();
    held.reason = "JobHeldUser";
    held.reason_detail = "launch failed requeued held";
    held.submit_time = at;
    held.restarts += 1;
    held.excluded_nodes = own_exclusions;
    slurm.jobs = {held};
    for (auto& n : slurm.node_list)
      if (n.name == node) {
        n.flags = {"DRAIN"};
        n.reason = reason;
        n.reason_at = at - 1;
      }
  }
  std::optional<std::string> own_exclusions = "";  // as squeue --json lists none
  // What the release kept the task off, sorted; "" when no list was set.
  std::vector<std::string> kept_off() const {
    if (slurm.exclusions_set.empty()) return {};
    const std::string& set = slurm.exclusions_set.back();
    auto nodes = hosts_in(set.substr(set.find(' ') + 1));
    std::sort(nodes.begin(), nodes.end());
    return nodes;
  }
  int releases() const {
    return static_cast<int>(
        std::count(slurm.controls.begin(), slurm.controls.end(), std::string("release 7")));
  }
};

// The defect, from Slurm's own output (captured on the local cluster, a prolog failing on
// node-1): squeue --json gives the held run as JobHeldUser, its words beside the reason. Before,
// llmwatch called it "stuck" with "reason JobHeldUser", named no node, and left the run held
// until a person came; at night, hours of the whole allocation.
TEST(LaunchFailureCycle, ARunSlurmHoldsAfterAFailedLaunchIsReleased) {
  EndingRun run;
  auto queue = parse_squeue_json(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-launch-failed.json")));
  auto nodes = parse_sinfo_json(
      testing::read_file(testing::fixture("slurm-22.05.8/sinfo-prolog-error.json")));
  ASSERT_TRUE(queue.ok() && nodes.ok());
  for (auto& j : queue.jobs) {  // as the [[job]] watches it
    j.name = "tr";
    j.user = current_user_name();
  }
  run.slurm.jobs = queue.jobs;
  run.slurm.node_list = nodes.nodes;
  auto r = run.cycle(1'795'872'900);
  EXPECT_EQ(run.slurm.controls, std::vector<std::string>{"release 3"}) << event_lines(*run.store);
  std::string told;
  for (const auto& f : r.findings) told += f.kind + ": " + f.summary + "\n";
  EXPECT_NE(told.find("node-1"), std::string::npos) << told;
}

// A launch can fail without Slurm draining the node: captured with node-1's spool directory
// made immutable (slurmd: "could not create a batch directory or file"). node-1 stays idle, so a
// release could start the run there again: told, not released.
TEST(LaunchFailureCycle, AFailedLaunchWhoseNodeSlurmLeftInServiceIsOnlyTold) {
  EndingRun run;
  auto queue = parse_squeue_json(
      testing::read_file(testing::fixture("slurm-22.05.8/squeue-launch-failed-no-drain.json")));
  auto nodes =
      parse_sinfo_json(testing::read_file(testing::fixture("slurm-22.05.8/sinfo-no-drain.json")));
  ASSERT_TRUE(queue.ok() && nodes.ok());
  ASSERT_EQ(queue.jobs.size(), 1u);
  ASSERT_TRUE(queue.jobs[0].launch_failed());
  queue.jobs[0].name = "tr";
  queue.jobs[0].user = current_user_name();
  run.slurm.jobs = queue.jobs;
  run.slurm.node_list = nodes.nodes;
  auto r = run.cycle(1'795'878'200);
  const Finding* f = run.finding(r, "launch-failed");
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("until a person releases it (Slurm took no node out for it)"),
            std::string::npos)
      << f->summary;
  EXPECT_TRUE(run.slurm.controls.empty()) << event_lines(*run.store);
}

TEST(LaunchFailureCycle, AHeldRunIsReleasedOnceAndASecondFailureIsOnlyTold) {
  HeldRun run;
  run.launch_fails_on("node-1", 1'800'000'000);
  auto r = run.cycle(run.now + 5);
  ASSERT_TRUE(run.finding(r, "launch-failed")) << event_lines(*run.store);
  EXPECT_EQ(run.releases(), 1) << event_lines(*run.store);
  run.cycle(run.now + 35);  // Slurm has not acted on it yet: still held, the same failure
  EXPECT_EQ(run.releases(), 1) << "once a failure";
  // node-1 is charged an incident for it, once: the lemon rule counts it if it fails again.
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-1", 1}}));
  // Released, it failed again on node-2 ten minutes later.
  run.launch_fails_on("node-2", 1'800'000'600);
  r = run.cycle(run.now + 605);
  const Finding* again = run.finding(r, "launch-failed");
  ASSERT_TRUE(again);
  EXPECT_NE(again->summary.find("failed again"), std::string::npos) << again->summary;
  EXPECT_EQ(run.releases(), 1) << "two nodes in a row: a person decides\n"
                               << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.submitted.empty()) << "a held run is not resubmitted beside itself";
  EXPECT_EQ(run.store->incident_counts(0),
            (std::map<std::string, int>{{"node-1", 1}, {"node-2", 1}}));
}

// Slurm's "Duplicate jobid" (a node that still had a job of that id after an outage) is
// Slurm's confusion, not the node's fault: released, but no incident against the node.
TEST(LaunchFailureCycle, ADuplicateJobidIsReleasedButChargesTheNodeNothing) {
  HeldRun run;
  run.launch_fails_on("node-3", 1'800'000'000, "Duplicate jobid");
  run.cycle(run.now + 5);
  EXPECT_EQ(run.releases(), 1) << event_lines(*run.store);
  EXPECT_TRUE(run.store->incident_counts(0).empty());
}

// #30, "never land on a bad node again": a release let Slurm start the run on any node, one the
// ledger holds with repeated incidents too, where a restart would have excluded it. Now the task
// is kept off it before the release, and off every node it excluded itself.
TEST(LaunchFailureCycle, AReleasedRunIsKeptOffTheLedgersSuspectsAndItsOwnExclusions) {
  HeldRun run;
  run.idle_nodes(6);              // room for the 3-node run off node-1, node-3 and node-4
  run.own_exclusions = "node-4";  // sbatch --exclude=node-4
  for (int i = 0; i < 2; ++i)
    run.store->add_incident(run.now - 3600 + i, "node-3", "5@" + std::to_string(i),
                            "tr crashed, attributed to node-3");
  run.launch_fails_on("node-1", 1'800'000'000);
  run.cycle(run.now + 5);
  ASSERT_EQ(run.releases(), 1) << event_lines(*run.store);
  EXPECT_EQ(run.slurm.exclusions_set.size(), 1u);
  EXPECT_EQ(run.kept_off(), (std::vector<std::string>{"node-1", "node-3", "node-4"}))
      << event_lines(*run.store);
  EXPECT_NE(event_lines(*run.store).find("excluding"), std::string::npos)
      << event_lines(*run.store);
}

// Nodes the run excludes itself are not spare: a 3-node run on 6 nodes that keeps off two of
// them has none left over once node-1 is out. Before, the ledger's suspect was excluded too, and
// the run waited for nodes it could never have (ReqNodeNotAvail). Excluding node-1 again, out
// anyway, takes no room.
TEST(LaunchFailureCycle, ARunsOwnExclusionsAreNotCountedAsSpareNodes) {
  HeldRun run;
  run.idle_nodes(6);
  run.own_exclusions = "node-[5-6]";
  for (int i = 0; i < 2; ++i)
    run.store->add_incident(run.now - 3600 + i, "node-3", "5@" + std::to_string(i),
                            "tr crashed, attributed to node-3");
  run.launch_fails_on("node-1", 1'800'000'000);
  auto r = run.cycle(run.now + 5);
  ASSERT_EQ(run.releases(), 1) << event_lines(*run.store);
  EXPECT_EQ(run.kept_off(), (std::vector<std::string>{"node-1", "node-5", "node-6"}))
      << event_lines(*run.store);
  EXPECT_TRUE(run.finding(r, "launch-failed"));
}

// squeue's text has no field for a task's own exclusions: scontrol says them. Where neither
// does, no list is set (setting one replaces the task's own), and the release is not withheld.
TEST(LaunchFailureCycle, ATextFormatTaskKeepsItsOwnExclusionsOrIsReleasedWithoutAList) {
  HeldRun run;
  run.own_exclusions.reset();
  run.slurm.shown_jobs["7"] = {{"ExcNodeList", "node-4"}};
  run.launch_fails_on("node-1", 1'800'000'000);
  run.cycle(run.now + 5);
  ASSERT_EQ(run.releases(), 1) << event_lines(*run.store);
  EXPECT_EQ(run.kept_off(), (std::vector<std::string>{"node-1", "node-4"}));

  HeldRun unknown;
  unknown.own_exclusions.reset();  // and scontrol forgot it
  unknown.launch_fails_on("node-1", 1'800'000'000);
  unknown.cycle(unknown.now + 5);
  EXPECT_EQ(unknown.releases(), 1) << event_lines(*unknown.store);
  EXPECT_TRUE(unknown.slurm.exclusions_set.empty());
  EXPECT_NE(event_lines(*unknown.store).find("excludes itself is unknown"), std::string::npos)
      << event_lines(*unknown.store);
}

// squeue's text gives no submit time, so every failure of a task was one episode: its second
// failure within the hour was not told as one, and one a day later was never released (the
// first release's key was taken). scontrol, asked for the held task alone, says when Slurm
// requeued it (captured: a prolog failing on node-1; the time as SLURM_TIME_FORMAT=%s prints it).
TEST(LaunchFailureCycle, ATextFormatTasksFailuresAreEachTheirOwnEpisode) {
  auto captured = parse_scontrol_show(
      testing::read_file(testing::fixture("slurm-22.05.8/scontrol-show-job-launch-failed.txt")));
  ASSERT_EQ(captured.size(), 1u);
  ASSERT_EQ(captured[0]["Restarts"], "1");
  HeldRun run;
  auto fails_on = [&](const std::string& node, std::int64_t at) {
    run.launch_fails_on(node, at);
    run.slurm.jobs[0].submit_time = 0;  // as squeue's text gives it
    run.slurm.jobs[0].restarts = 0;
    run.slurm.jobs[0].excluded_nodes.reset();
    for (auto& n : run.slurm.node_list) n.reason_at = 0;  // so does sinfo's
    run.slurm.shown_jobs["7"] = captured[0];
    run.slurm.shown_jobs["7"]["SubmitTime"] = std::to_string(at);
  };
  fails_on("node-1", 1'800'000'000);
  run.cycle(run.now + 5);
  ASSERT_EQ(run.releases(), 1) << event_lines(*run.store);
  EXPECT_EQ(run.kept_off(), (std::vector<std::string>{"node-1", "node-3"}))
      << "its own list (node-3) kept";
  fails_on("node-2", 1'800'000'600);
  auto r = run.cycle(run.now + 605);
  const Finding* again = run.finding(r, "launch-failed");
  ASSERT_TRUE(again);
  EXPECT_NE(again->summary.find("failed again"), std::string::npos) << again->summary;
  EXPECT_EQ(run.releases(), 1);
  // A day later, on another node: a new failure, released again.
  fails_on("node-4", 1'800'086'400);
  run.cycle(run.now + 86'405);
  EXPECT_EQ(run.releases(), 2) << event_lines(*run.store);
}

TEST(LaunchFailureCycle, NothingIsReleasedInADryRunOrWhenNoNodeWasTakenOut) {
  HeldRun dry;
  dry.config.dry_run = true;
  dry.launch_fails_on("node-1", 1'800'000'000);
  dry.cycle(dry.now + 5);
  EXPECT_EQ(dry.releases(), 0);

  HeldRun blind;
  blind.launch_fails_on("node-1", 1'800'000'000);
  blind.slurm.node_list.clear();  // sinfo shows no node out for it
  auto r = blind.cycle(blind.now + 5);
  ASSERT_TRUE(blind.finding(r, "launch-failed"));
  EXPECT_EQ(blind.releases(), 0);
}

}  // namespace
}  // namespace llmwatch
