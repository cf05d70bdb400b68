// The run lifecycle's actions, trusted through whole cycles of the real Supervisor against a
// FakeSlurm (#25, #26): every end of a task is its own episode; a healthy run is never
// duplicated; reporters are not blamed; one crash is one incident; a person's cancel stays;
// a failed restart is retried; a dry run takes no key.
#include <gtest/gtest.h>

#include <algorithm>

#include "ending_run.h"
#include "rules/end_cause.h"
#include "rules/node_report.h"
#include "rules/post_mortem.h"
#include "store/goodput_ledger.h"
#include "store_reading.h"

namespace llmwatch {
namespace {

using testing::EndingRun;
using testing::event_lines;
using testing::kCudaError;
using testing::node_check_json;
using testing::write_file;

constexpr const char* kSoftwareError = "Traceback (most recent call last):\nKeyError: 'x'\n";
// [gpu] on, and a node-check in the dying task that says nothing: nothing tells what a crash
// naming no node should avoid, so its restart is not queued behind the task and waits for its
// end (with [gpu] off it is queued: the end would know no more).
constexpr const char* kCheckSaysNothing = "[gpu]\nenabled = true\ncollect = \"results\"\n";

// An end that follows another end with no cycle seeing the run alive in between (#25): a
// person cancels task 7 (an info "ended" finding, still firing), and the resubmitted task 8
// dies at start. Its crash is its own episode: recorded, told and restarted. Before, both ends
// shared the key job:tr/ended, so the second was folded into the open info finding and never
// acted on (the flaky PostMortem integration test).
TEST(LifecycleTrust, AnEndThatFollowsAnotherEndIsItsOwnEpisode) {
  EndingRun run;
  run.runs_then_ends("", "CANCELLED", false);
  ASSERT_TRUE(run.slurm.submitted.empty()) << "a person's cancel is left alone";
  SlurmJob second = run.task("FAILED");
  second.job_id = 8;
  second.start_time = 1'800'000'100;
  second.std_out = run.dir / "train-8.log";
  write_file(second.std_out, std::string("[rank3]: ") + kCudaError);
  run.slurm.jobs = {second};
  run.slurm.shown_jobs["8"] = run.slurm.shown_jobs["7"];
  run.slurm.shown_jobs["8"]["JobState"] = "FAILED";
  auto r = run.cycle(run.now + 60);
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "GPU error");
  EXPECT_EQ(r.new_findings, 1) << "the second end is a new finding, not the first one again";
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << "the crash after the cancel is restarted\n"
                                            << event_lines(*run.store);
  int told = 0;
  for (const auto& e : run.store->events(0, "%", 1000))
    told += e.kind == "finding" && e.message.find("job:tr/ended") == 0 &&
            e.message.find("GPU error") != std::string::npos;
  EXPECT_EQ(told, 1) << "the second end is told in the history\n" << event_lines(*run.store);
}

// A cancel slurmctld did not keep (killed right after scancel returned: the chaos soak, where
// the cancelled hung task was still RUNNING 55 s later) is issued again, to that task only,
// though the run's restart runs first in the queue; twice at most, then a person is called.
// Before, the cancel's key was done and nothing cancelled the task again, for as long as it ran.
TEST(LifecycleTrust, ACancelThatDidNotHoldIsIssuedAgainToThatTaskOnly) {
  EndingRun run;
  write_file(run.log, "global_step: 1\n");
  SlurmJob old_task = run.task("RUNNING"), restarted = run.task("RUNNING");
  restarted.job_id = 8;
  restarted.start_time = 1'800'000'010;
  run.slurm.jobs = {restarted, old_task};
  run.slurm.loses_cancels = true;
  auto cancel_done = [&](const std::string& key, double at) {
    auto id = run.store->begin_action(key, "cancel", "tr", "job:tr/hung: no step", at);
    ASSERT_TRUE(id);
    run.store->finish_action(*id, "done", "scancel 7", at);
  };
  cancel_done("cancel:7@1799999000", run.now);
  auto r = run.cycle(run.now + 10);
  EXPECT_FALSE(run.finding(r, "cancel-not-held")) << "within the margin";
  EXPECT_TRUE(run.slurm.cancelled.empty());

  r = run.cycle(run.now + 40);
  const Finding* f = run.finding(r, "cancel-not-held");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_EQ(run.slurm.cancelled, std::vector<std::string>{"7"}) << event_lines(*run.store);
  run.cycle(run.now + 50);
  EXPECT_EQ(run.slurm.cancelled.size(), 1u) << "once an episode";
  run.cycle(run.now + 80);
  EXPECT_EQ(run.slurm.cancelled, (std::vector<std::string>{"7", "7"}));
  r = run.cycle(run.now + 120);
  f = run.finding(r, "cancel-not-held");
  ASSERT_TRUE(f);
  EXPECT_NE(f->summary.find("needs a person"), std::string::npos) << f->summary;
  run.cycle(run.now + 200);
  EXPECT_EQ(run.slurm.cancelled.size(), 2u) << "no third scancel: a person is called";
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();

  // Slurm at work on it at last: nothing more to say.
  old_task.state = "COMPLETING";
  run.slurm.jobs = {restarted, old_task};
  r = run.cycle(run.now + 230);
  EXPECT_FALSE(run.finding(r, "cancel-not-held"));
}

// A task that logs a handled traceback (a wandb or HTTP retry) and steps on is a warning,
// never a crash to act on (#26.1: on_crash resubmitted it while it still trained, and two
// runs wrote one checkpoint directory).
TEST(LifecycleTrust, AHandledTracebackInARunThatStepsOnIsAWarningAndNothingIsSubmitted) {
  EndingRun run;
  auto r = run.runs_and_prints(
      "Traceback (most recent call last):\nrequests.exceptions.ConnectionError: wandb\n"
      "global_step: 2\n");
  const Finding* f = run.finding(r, "crashed");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Warning) << f->summary;
  EXPECT_NE(f->summary.find("still makes progress"), std::string::npos) << f->summary;
  write_file(run.log, "global_step: 3\n", true);
  run.cycle(run.now + 60);
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  EXPECT_TRUE(run.slurm.cancelled.empty());
}

// A fatal error after a handled traceback the run stepped past is a crash of its own: critical,
// its restart waiting for the task's end (before, the handled traceback was the task's crash
// for good, and the fatal error went unseen until the task ended). Another handled traceback is
// still no crash.
TEST(LifecycleTrust, AFatalErrorAfterAHandledTracebackIsACrash) {
  EndingRun run(kCheckSaysNothing);
  run.runs_and_prints(
      "Traceback (most recent call last):\nrequests.exceptions.ConnectionError: wandb\n"
      "global_step: 2\n");
  write_file(run.log,
             "Traceback (most recent call last):\nConnectionError: wandb\nglobal_step: 3\n", true);
  auto r = run.cycle(run.now + 60);
  ASSERT_TRUE(run.finding(r, "crashed"));
  EXPECT_EQ(run.finding(r, "crashed")->severity, Severity::Warning);
  write_file(run.log, std::string("global_step: 4\n") + kCudaError, true);
  r = run.cycle(run.now + 90);
  const Finding* f = run.finding(r, "crashed");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Critical) << f->summary;
  EXPECT_NE(f->summary.find("cuda-error"), std::string::npos) << f->summary;
  EXPECT_TRUE(run.slurm.submitted.empty()) << "submitted beside a live task: " << run.submitted();
  EXPECT_NE(event_lines(*run.store).find("waits for its end"), std::string::npos)
      << event_lines(*run.store);
}

// A run of task 7 stepping every 10 s, whose rank's NCCL error names node-2 (two peers report a
// failed completion from its address, which this cycle's sinfo maps to node-2) while the task
// still runs: the cycle that reads the error, 5 s after the last step.
CycleResult crash_naming_node_2(EndingRun& run, int nodes = 5) {
  run.idle_nodes(nodes);
  for (auto& n : run.slurm.node_list) n.address = "10.11.0." + n.name.substr(5);  // sinfo's
  run.steps_every_10s();
  write_file(run.log,
             "node-1:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2<4711> "
             "with error 12\nnode-3:51234:51240 [1] NCCL WARN NET/IB : Got completion from peer "
             "10.11.0.2<4711> with error 12\ntorch.distributed.DistBackendError: NCCL error\n",
             true);
  return run.cycle(run.now + 55);
}

// The restart llmwatch queued behind task 7, as squeue lists it.
SlurmJob queued_restart(EndingRun& run) {
  SlurmJob q = run.task("PENDING");
  q.job_id = 1001;
  q.reason = "Dependency";
  q.start_time = 0;
  q.nodes.clear();
  return q;
}

// The same job once Slurm started it, `after` seconds past run.now (task 7 gone).
SlurmJob started_restart(EndingRun& run, double after) {
  SlurmJob q = queued_restart(run);
  q.state = "RUNNING";
  q.reason.clear();
  q.start_time = static_cast<std::int64_t>(run.now + after);
  return q;
}

// Task 7's crash queued its restart (1001, pending); then 7 steps on past its crash line (a
// trainer that caught the error), and the cycle 60 s on reads that step.
CycleResult steps_on_behind_queued_restart(EndingRun& run) {
  crash_naming_node_2(run);
  EXPECT_EQ(run.slurm.submitted.size(), 1u);
  run.slurm.jobs.push_back(queued_restart(run));
  write_file(run.log, "global_step: 7\n", true);
  return run.cycle(run.now + 60);
}

// The crash's peers wait in the collective: the hang rule ends them after two step intervals,
// and the restart stays off node-2. Before, the hang's restart (which runs first) had no
// suspects; and the crash's, seen while the task ran, blamed the two reporters: no address was
// mapped then.
TEST(LifecycleTrust, PeersLeftWaitingByACrashAreRestartedOffItsNode) {
  EndingRun run("confirm_hang = \"0s\"\n");
  auto r = crash_naming_node_2(run);
  ASSERT_TRUE(run.finding(r, "crashed"));
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << "queued behind task 7\n" << event_lines(*run.store);
  run.slurm.jobs.push_back(queued_restart(run));
  r = run.cycle(run.now + 75);  // 25 s after the last step
  ASSERT_TRUE(run.finding(r, "hung")) << event_lines(*run.store);
  EXPECT_EQ(run.slurm.cancelled, std::vector<std::string>{"7"});
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--exclude=node-2 "), std::string::npos) << run.submitted();
}

// squeue's text lists no task's own exclusions, so a crash's restart counted the nodes the run
// keeps off itself as spare: a 3-node run on 5 nodes that excludes node-[4-5] has none to spare,
// and excluding its suspect node-2 too left it 2 nodes it could use. It would have waited for
// good (ReqNodeNotAvail). scontrol, asked for the crashed task alone, says its list.
TEST(LifecycleTrust, ATextFormatRunsOwnExclusionsAreNotCountedAsSpareNodes) {
  EndingRun run;
  run.slurm.shown_jobs["7"] = {{"ExcNodeList", "node-[4-5]"}};
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--exclude=node-[4-5] "), std::string::npos) << run.submitted();
  EXPECT_EQ(run.submitted().find("node-2"), std::string::npos) << run.submitted();
  EXPECT_NE(event_lines(*run.store).find("node-2"), std::string::npos)
      << "the restart says which suspect it could not keep off\n"
      << event_lines(*run.store);
  // With room to spare (a sixth node), node-2 is kept off as well.
  EndingRun roomy;
  roomy.slurm.shown_jobs["7"] = {{"ExcNodeList", "node-[4-5]"}};
  crash_naming_node_2(roomy, 6);
  ASSERT_EQ(roomy.slurm.submitted.size(), 1u) << event_lines(*roomy.store);
  EXPECT_NE(roomy.submitted().find("--exclude=node-[2,4-5] "), std::string::npos)
      << roomy.submitted();
}

// #30: a crash the log attributes is restarted at once, queued behind its dying task: Slurm
// starts the new run the moment the task is gone (its other ranks hanging on, a slow epilog),
// not at llmwatch's next look, half an interval later. `afternotok`: a task that ends well after
// all has Slurm withdraw it. Before, the restart waited for a cycle to see the task gone
// (bench/crash_latency.py --teardown 8: 16.8, 10.8, 15.8 s from the crash line to RUNNING).
TEST(LifecycleTrust, ACrashThatNamesItsNodeIsRestartedQueuedBehindItsDyingTask) {
  EndingRun run;
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  const auto& args = run.slurm.submitted.front();
  for (const char* arg : {"--dependency=afternotok:7", "--kill-on-invalid-dep=yes",
                          "--exclude=node-2", "--job-name=tr"})
    EXPECT_NE(std::find(args.begin(), args.end(), arg), args.end())
        << arg << ": " << run.submitted();
  EXPECT_NE(event_lines(*run.store).find("queued /train.sh as job 1001, to start once 7 is gone"),
            std::string::npos)
      << event_lines(*run.store);
  // The task lingers: nothing more is submitted, nothing withdrawn.
  run.slurm.jobs.push_back(queued_restart(run));
  auto r = run.cycle(run.now + 58);
  EXPECT_FALSE(run.finding(r, "restart-unneeded"));
  // Slurm starts the queued run once task 7 is gone: one run, never a second restart.
  SlurmJob started = started_restart(run, 62);
  run.slurm.jobs = {started};
  run.shows_ended("FAILED");
  run.cycle(run.now + 65);
  run.slurm.jobs = {started};
  run.cycle(run.now + 95);
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.cancelled.empty()) << event_lines(*run.store);
}

// Slurm starts the queued run the moment task 7 is gone, so no cycle sees the run without a
// task: 7's end still gets its post-mortem, told in the history, and the ledger charges its idle
// end to the crash's cause and node, and the time until the new start to the queue. Before,
// the end went unexamined: "idle end" of an unknown cause on no node, the queue's time in it,
// and the next run's redone steps "unknown" too (GoodputTruth on the local cluster under the
// sanitizer, where the crash was queued behind its task).
TEST(LifecycleTrust, AnEndTheQueuedRestartFollowedAtOnceHasItsPostMortem) {
  EndingRun run;
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  run.slurm.jobs.push_back(queued_restart(run));
  run.cycle(run.now + 58);
  SlurmJob ended = run.task("FAILED"), started = started_restart(run, 62);
  run.slurm.jobs = {ended, started};
  run.shows_ended("FAILED");
  run.slurm.shown_jobs["7"]["EndTime"] = std::to_string(static_cast<std::int64_t>(run.now) + 60);
  run.cycle(run.now + 65);
  auto pm = PostMortem::from_json(run.store->get("postmortem:tr").value_or(""));
  ASSERT_TRUE(pm) << event_lines(*run.store);
  EXPECT_EQ(pm->task, "7");
  EXPECT_EQ(pm->verdict.cls, EndClass::Network) << pm->verdict.summary;
  EXPECT_NE(event_lines(*run.store).find("task 7 ended"), std::string::npos)
      << event_lines(*run.store);
  double idle_named = 0, idle_unknown = 0, queued = 0;
  for (const auto& row : GoodputLedger(*run.store).rows(0)) {
    if (row.bucket == "idle end")
      (row.cause == "unknown" ? idle_unknown : idle_named) += row.gpu_seconds;
    if (row.bucket == "queue") queued += row.gpu_seconds;
  }
  EXPECT_GT(idle_named, 0) << event_lines(*run.store);
  EXPECT_EQ(idle_unknown, 0);
  EXPECT_GT(queued, 0) << "7's end to 1001's start";
  EXPECT_TRUE(run.slurm.cancelled.empty());
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
}

// A run of task 7 stepping every 10 s whose log prints a CUDA error naming no node, while the
// task still runs (its other ranks hang on): the cycle that reads it, 5 s after the last step.
// With [gpu] on, node-check in task 7's allocation answers `check`.
CycleResult crash_naming_no_node(EndingRun& run, const std::string& check) {
  run.idle_nodes(5);
  run.steps_every_10s();
  write_file(run.log, kCudaError, true);
  run.slurm.step_output = check;
  return run.cycle(run.now + 55);
}

// #30: a crash whose lines name no node is checked in its dying task's own allocation (srun
// --overlap, as the node-health check looks), in the cycle that reads it; the node that fails is
// the crash's suspect, and the restart is queued behind the task, off it. Before, the restart
// waited for the task's end and a node-check after it: half an interval later when it lingered.
TEST(LifecycleTrust, ACrashThatNamesNoNodeIsCheckedInItsDyingTaskAndQueuedBehindIt) {
  EndingRun run("[gpu]\nenabled = true\ncollect = \"results\"\n");
  auto r =
      crash_naming_no_node(run, node_check_json("node-1", Verdict::Ok, run.now + 55) +
                                    node_check_json("node-2", Verdict::Ok, run.now + 55) +
                                    node_check_json("node-3", Verdict::Critical, run.now + 55));
  ASSERT_TRUE(run.finding(r, "crashed"));
  ASSERT_EQ(run.slurm.steps.size(), 1u) << event_lines(*run.store);
  std::string step;
  for (const auto& a : run.slurm.steps[0]) step += a + " ";
  EXPECT_NE(step.find("--overlap --jobid=7 "), std::string::npos) << step;
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--dependency=afternotok:7 "), std::string::npos)
      << run.submitted();
  EXPECT_NE(run.submitted().find("--exclude=node-3 "), std::string::npos) << run.submitted();
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-3", 1}}));
}

// #30: with [gpu] off there is no node-check to wait for: the end's post-mortem would have the
// lines and Slurm's word, which the cycle has now. So a crash that names no node is queued
// behind its dying task at once; before, its restart waited for Slurm to say the task ended
// (bench/crash_latency.py, the task lingering 12 s: 13.7, 12.7 s; 20 s: until the hang rule
// ended it). Lines read later that name a node (the peers of the rank that died report it)
// keep the queued run off that node while it waits.
TEST(LifecycleTrust, WithoutANodeCheckACrashNamingNoNodeIsQueuedAndKeptOffNodesNamedLater) {
  EndingRun run;
  crash_naming_no_node(run, "");
  EXPECT_TRUE(run.slurm.steps.empty());
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--dependency=afternotok:7 "), std::string::npos)
      << run.submitted();
  EXPECT_EQ(run.submitted().find("--exclude"), std::string::npos) << run.submitted();
  SlurmJob queued = queued_restart(run);
  queued.excluded_nodes = "";
  run.slurm.jobs.push_back(queued);
  for (auto& n : run.slurm.node_list) n.address = "10.11.0." + n.name.substr(5);  // sinfo's
  write_file(run.log,
             "node-1:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2<4711> "
             "with error 12\nnode-3:51234:51240 [1] NCCL WARN NET/IB : Got completion from peer "
             "10.11.0.2<4711> with error 12\n",
             true);
  auto r = run.cycle(run.now + 58);
  ASSERT_TRUE(run.finding(r, "restart-keep-off")) << event_lines(*run.store);
  EXPECT_EQ(run.slurm.exclusions_set, std::vector<std::string>{"1001 node-2"});
  // Kept off: not again, nothing withdrawn, nothing more submitted.
  run.slurm.jobs.back().excluded_nodes = "node-2";
  r = run.cycle(run.now + 61);
  EXPECT_FALSE(run.finding(r, "restart-keep-off")) << event_lines(*run.store);
  EXPECT_EQ(run.slurm.exclusions_set.size(), 1u);
  EXPECT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_TRUE(run.slurm.cancelled.empty());
}

// crash_naming_node_2, whose restart is queued off `excluded` (its --exclude), then listed by
// squeue as Slurm holds it.
void crash_queued_off(EndingRun& run, const std::string& excluded) {
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--exclude=" + excluded + " "), std::string::npos)
      << run.submitted();
  SlurmJob queued = queued_restart(run);
  queued.excluded_nodes = excluded;
  run.slurm.jobs.push_back(queued);
}

// #30: every restart stays off the nodes the suspicion ledger holds with repeated incidents. A
// restart queued behind its dying task waits there: a node that comes to be held meanwhile (a
// second incident from another run's crash) is added to its list while Slurm may still place
// it. Before, only the crash's own later suspects were, and Slurm started the run on node-4.
TEST(LifecycleTrust, ANodeTheLedgerComesToHoldWhileARestartWaitsIsKeptOffToo) {
  EndingRun run;
  run.store->add_incident(run.now - 3600, "node-4", "5@1799990000", "an earlier crash");
  crash_queued_off(run, "node-2");
  run.store->add_incident(run.now + 56, "node-4", "9@1799999000", "another run's crash");
  auto r = run.cycle(run.now + 58);
  const Finding* f = run.finding(r, "restart-keep-off");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("suspicion ledger"), std::string::npos) << f->summary;
  EXPECT_EQ(run.slurm.exclusions_set, std::vector<std::string>{"1001 node-[2,4]"});
  EXPECT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_TRUE(run.slurm.cancelled.empty());
}

// The other side: a node the ledger held already when the restart was queued was weighed then
// (kept off as far as the run fits, and the restart said what it could not keep off); it is not
// told again each cycle as if it were new. Node-[4-5] are held; with two spare nodes the run
// stays off node-2 and one of them.
TEST(LifecycleTrust, ANodeTheLedgerHeldWhenTheRestartWasQueuedIsNotToldAgain) {
  EndingRun run;
  for (const char* node : {"node-4", "node-5"})
    for (int i = 0; i < 2; ++i)
      run.store->add_incident(run.now - 3600 + i, node, std::to_string(5 + i) + "@1799990000",
                              "earlier crashes");
  crash_queued_off(run, "node-[2,4]");
  auto r = run.cycle(run.now + 58);
  EXPECT_FALSE(run.finding(r, "restart-keep-off")) << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.exclusions_set.empty());
}

// Not a traceback, with [gpu] off too: a trainer may catch it and step on, and only its end
// says whether it did. Queued behind it, the restart was withdrawn again once the run stepped
// (PostMortem.AHandledTracebackNeverDuplicatesTheRun on the local cluster, in CI).
TEST(LifecycleTrust, ACatchableCrashWithGpuOffIsNotQueuedButWaitsForItsEnd) {
  EndingRun run;
  auto r = run.runs_and_prints(kSoftwareError);
  const Finding* f = run.finding(r, "crashed");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Critical) << f->summary;
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  EXPECT_NE(event_lines(*run.store).find("waits for its end"), std::string::npos)
      << event_lines(*run.store);
}

// A check that cannot speak for every node of the task (one report lost, the task gone under
// it) leaves the restart to the end's node-check, as before; one that finds every node well
// queues it with nothing excluded, as that check would have. A crash the log attributes asks
// no check: its lines name the nodes.
TEST(LifecycleTrust, ADyingTasksCheckThatDoesNotSpeakForEveryNodeLeavesTheRestartToItsEnd) {
  EndingRun partial("[gpu]\nenabled = true\ncollect = \"results\"\n");
  crash_naming_no_node(partial, node_check_json("node-1", Verdict::Ok, partial.now + 55) +
                                    node_check_json("node-3", Verdict::Ok, partial.now + 55));
  EXPECT_EQ(partial.slurm.steps.size(), 1u);
  EXPECT_TRUE(partial.slurm.submitted.empty()) << partial.submitted();

  EndingRun well("[gpu]\nenabled = true\ncollect = \"results\"\n");
  crash_naming_no_node(well, node_check_json("node-1", Verdict::Ok, well.now + 55) +
                                 node_check_json("node-2", Verdict::Ok, well.now + 55) +
                                 node_check_json("node-3", Verdict::Ok, well.now + 55));
  ASSERT_EQ(well.slurm.submitted.size(), 1u) << event_lines(*well.store);
  EXPECT_NE(well.submitted().find("--dependency=afternotok:7 "), std::string::npos);
  EXPECT_EQ(well.submitted().find("--exclude"), std::string::npos) << well.submitted();

  EndingRun named("[gpu]\nenabled = true\ncollect = \"results\"\n");
  crash_naming_node_2(named);
  EXPECT_TRUE(named.slurm.steps.empty());
  EXPECT_EQ(named.slurm.submitted.size(), 1u);
}

// What Slurm cannot tell: task 7 steps on after its crash line (a trainer that caught the
// error). The queued run would start after its end, a second run of one training: llmwatch
// withdraws it, and leaves task 7 alone.
TEST(LifecycleTrust, ARestartQueuedBehindATaskThatStepsOnIsWithdrawn) {
  EndingRun run;
  auto r = steps_on_behind_queued_restart(run);
  const Finding* f = run.finding(r, "restart-unneeded");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("7 steps on past its"), std::string::npos) << f->summary;
  EXPECT_EQ(run.slurm.cancelled, std::vector<std::string>{"1001"});
  run.cycle(run.now + 90);
  EXPECT_EQ(run.slurm.cancelled, std::vector<std::string>{"1001"}) << "once";
  EXPECT_EQ(run.slurm.submitted.size(), 1u);
}

// A withdrawn restart never started a run, so it leaves the job's restart budget as it was.
// Before, it counted: with max_restarts = 1, task 7's real crash later was left down ("not done:
// max_restarts (1 per 1h) reached"), and status showed a restart that never happened.
TEST(LifecycleTrust, AWithdrawnRestartDoesNotUseUpTheRestartBudget) {
  EndingRun run("max_restarts = 1\n");
  steps_on_behind_queued_restart(run);
  ASSERT_EQ(run.slurm.cancelled, std::vector<std::string>{"1001"}) << event_lines(*run.store);
  EXPECT_EQ(run.store->count_actions("restart", "tr", 0), 0) << "a restart that never started";
  // Task 7 crashes for good later, and ends.
  write_file(run.log, "global_step: 8\nRuntimeError: CUDA error: an illegal memory access\n", true);
  run.slurm.jobs = {run.task("FAILED")};
  run.shows_ended("FAILED");
  run.cycle(run.now + 120);
  EXPECT_EQ(run.slurm.submitted.size(), 2u) << event_lines(*run.store);
  EXPECT_EQ(run.store->count_actions("restart", "tr", 0), 1);
}

// What Slurm withdraws by itself: task 7 ends well after all (exit 0), and --kill-on-invalid-dep
// cancels the queued run, which never started. Its restart gives back the budget as one llmwatch
// withdrew does, and the history says so. Before, the journal kept it as a restart done.
TEST(LifecycleTrust, ARestartSlurmWithdrewWhenTheTaskEndedWellDoesNotCount) {
  EndingRun run;
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  run.slurm.jobs = {run.task("COMPLETED")};  // 1001 is gone: DependencyNeverSatisfied
  run.shows_ended("COMPLETED", "0:0");
  run.cycle(run.now + 65);
  EXPECT_EQ(run.store->count_actions("restart", "tr", 0), 0) << event_lines(*run.store);
  EXPECT_NE(event_lines(*run.store).find("withdrawn by Slurm"), std::string::npos)
      << event_lines(*run.store);
  EXPECT_TRUE(run.slurm.cancelled.empty());
  EXPECT_EQ(run.slurm.submitted.size(), 1u);
}

// A person cancels task 7 while its restart is queued: to Slurm a cancel is a failure, so the
// queued run starts in its place. llmwatch cannot tell what the person meant, and starts or
// stops nothing: it warns, naming the job to cancel. Before, nothing was said. A cancel of
// llmwatch's own (the hang rule's) is the queued run's very purpose: no warning then.
TEST(LifecycleTrust, ATaskAPersonCancelsBehindAQueuedRestartIsTold) {
  EndingRun run;
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  SlurmJob started = started_restart(run, 60);
  run.slurm.jobs = {run.task("CANCELLED"), started};
  run.shows_ended("CANCELLED", "0:15");
  auto r = run.cycle(run.now + 65);
  const Finding* f = run.finding(r, "restart-after-cancel");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_NE(f->summary.find("scancel 1001 if the run was meant to stop"), std::string::npos)
      << f->summary;
  EXPECT_TRUE(run.slurm.cancelled.empty());
  EXPECT_EQ(run.slurm.submitted.size(), 1u);

  EndingRun hung("confirm_hang = \"0s\"\n");
  crash_naming_node_2(hung);
  hung.slurm.jobs.push_back(queued_restart(hung));
  hung.cycle(hung.now + 75);  // the peers' hang: llmwatch cancels task 7
  ASSERT_EQ(hung.slurm.cancelled, std::vector<std::string>{"7"}) << event_lines(*hung.store);
  SlurmJob after = started_restart(hung, 76);
  hung.slurm.jobs = {hung.task("CANCELLED"), after};
  hung.shows_ended("CANCELLED", "0:15");
  EXPECT_FALSE(hung.finding(hung.cycle(hung.now + 80), "restart-after-cancel"))
      << event_lines(*hung.store);
}

// ...or Slurm requeued task 7 (a node failure with --requeue): it is back in the queue under its
// own id, and the queued run would start after the requeued run's end.
TEST(LifecycleTrust, ARestartQueuedBehindATaskSlurmRequeuedIsWithdrawn) {
  EndingRun run;
  crash_naming_node_2(run);
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  SlurmJob requeued = run.task("PENDING");
  requeued.reason = "BeginTime";
  // Until Slurm's scheduler first looks at it, squeue shows a new job's reason as None.
  SlurmJob queued = queued_restart(run);
  queued.reason = "None";
  run.slurm.jobs = {requeued, queued};
  auto r = run.cycle(run.now + 60);
  const Finding* f = run.finding(r, "restart-unneeded");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("back in the queue"), std::string::npos) << f->summary;
  EXPECT_EQ(run.slurm.cancelled, std::vector<std::string>{"1001"});
}

// A crash seen while the task is still alive (it printed its error and has not yet exited):
// the restart waits for its end, then runs once (#26.1: restart never submits beside a live
// task of the run).
TEST(LifecycleTrust, TheRestartOfACrashWaitsForTheTaskToEnd) {
  EndingRun run(kCheckSaysNothing);
  auto r = run.runs_and_prints(kCudaError);
  ASSERT_TRUE(run.finding(r, "crashed"));
  EXPECT_EQ(run.finding(r, "crashed")->severity, Severity::Critical);
  EXPECT_TRUE(run.slurm.submitted.empty()) << "submitted beside a live task: " << run.submitted();
  // The task it waits for, for the daemon to ask Slurm about alone (app/cmd_run.cpp).
  EXPECT_EQ(r.awaited, std::vector<std::string>{"7"});
  EXPECT_EQ(run.cycle(run.now + 60).awaited, std::vector<std::string>{"7"});
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  run.slurm.jobs = {run.task("FAILED")};
  run.shows_ended("FAILED");
  EXPECT_TRUE(run.cycle(run.now + 90).awaited.empty());
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << "restarted once the task ended\n"
                                            << event_lines(*run.store);
  run.cycle(run.now + 120);
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << "and only once";
  EXPECT_EQ(event_lines(*run.store).find("waits for its end"),
            event_lines(*run.store).rfind("waits for its end"))
      << "the wait is told once\n"
      << event_lines(*run.store);
}

// The defect (stop 53, noticed, not fixed): a wake replays its tick's squeue answer, which
// cannot list a run its owner resubmitted by hand since the tick; the restart that wake made
// started a second run beside it (two runs, one checkpoint directory). A restart made on a
// replayed answer now asks Slurm for the run's tasks first; a tick asks nothing more.
TEST(LifecycleTrust, ARestartMadeOnAWakeNeverStartsBesideARunResubmittedSinceTheTick) {
  EndingRun run(kCheckSaysNothing);
  run.runs_and_prints(kCudaError);
  ASSERT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  EXPECT_EQ(run.slurm.named_calls, 0) << "a tick's own answer is used as it is";
  // The wake after the end look: 7 ended (as settle_ended marks it in the replayed snapshot),
  // and since the tick its owner resubmitted the run by hand as 8, which only Slurm knows.
  run.slurm.jobs = {run.task("FAILED")};
  run.shows_ended("FAILED");
  run.slurm.queue_age = 12;
  SlurmJob by_hand = run.task("RUNNING");
  by_hand.job_id = 8;
  by_hand.start_time += 1'000;
  run.slurm.listed_now = std::vector<SlurmJob>{run.task("FAILED"), by_hand};
  run.cycle(run.now + 42);
  EXPECT_TRUE(run.slurm.submitted.empty()) << "a second run beside 8: " << run.submitted();
  EXPECT_EQ(run.slurm.named_calls, 1);
  // The journal says what it waits for (the wait itself is told once, when it began).
  auto restart_detail = [&run] {
    for (const auto& a : run.store->recent_actions(100))
      if (a.kind == "restart") return a.state + ": " + a.detail;
    return std::string("no restart journaled");
  };
  EXPECT_EQ(restart_detail(), "waiting: 8 of tr is RUNNING: the restart waits for its end");
  // Slurm cannot be asked: the restart waits on what it cannot tell, and submits nothing.
  run.slurm.named_error = "squeue: timed out after 30 s";
  run.cycle(run.now + 44);
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  EXPECT_NE(restart_detail().find("waiting: cannot tell whether another run of tr started since "
                                  "the queue was read 12 s ago (squeue: timed out after 30 s)"),
            std::string::npos)
      << restart_detail();
  // Once Slurm lists nothing of tr that lives, the wake restarts the run.
  run.slurm.named_error.clear();
  run.slurm.listed_now = std::vector<SlurmJob>{run.task("FAILED")};
  run.cycle(run.now + 46);
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
}

// `scontrol requeue` (or preemption): Slurm signals the task, torchrun prints its SIGTERM
// traceback while the task is COMPLETING, and the task comes back PENDING under its own id.
// The traceback is the end's doing, not a crash: nothing is journaled to restart it. Before,
// the live crash rule read it as a crash and journaled a restart that waited beside the
// requeued run (the PostMortem.ARequeuedTaskIsNeverStartedTwice CI failure).
TEST(LifecycleTrust, ATracebackPrintedWhileSlurmEndsTheTaskIsNoCrash) {
  EndingRun run;
  write_file(run.log, "global_step: 1\n");
  run.slurm.jobs = {run.task("RUNNING")};
  run.cycle(run.now);
  write_file(run.log,
             "Traceback (most recent call last):\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 9 got "
             "signal: 15\n",
             true);
  run.slurm.jobs = {run.task("COMPLETING")};
  auto r = run.cycle(run.now + 30);
  EXPECT_FALSE(run.finding(r, "crashed")) << run.finding(r, "crashed")->summary;
  run.slurm.jobs = {run.task("PENDING")};
  run.cycle(run.now + 60);
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  for (const auto& a : run.store->recent_actions(100))
    EXPECT_NE(a.kind, "restart") << a.state << ": " << a.detail;
}

// A real crash first seen while the task is COMPLETING is judged by its end, and restarted
// once the task is gone: skipping the live rule for an ending task loses no crash.
TEST(LifecycleTrust, ACrashFirstSeenWhileTheTaskEndsIsRestartedOnceItIsGone) {
  EndingRun run;
  write_file(run.log, "global_step: 1\n");
  run.slurm.jobs = {run.task("RUNNING")};
  run.cycle(run.now);
  write_file(run.log, kCudaError, true);
  run.slurm.jobs = {run.task("COMPLETING")};
  run.cycle(run.now + 30);
  run.slurm.jobs = {run.task("FAILED")};
  run.shows_ended("FAILED");
  auto r = run.cycle(run.now + 60);
  ASSERT_TRUE(run.finding(r, "ended"));
  EXPECT_EQ(run.finding(r, "ended")->cause, "GPU error");
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
}

// The trigger: node-1 and node-3 both print a failed completion from node-2's address.
// The restart avoids node-2 alone and the ledger charges node-2 alone (#26.2: node-[1-3],
// every node of the run, were excluded and charged).
TEST(LifecycleTrust, ReportersOfAPeerErrorAreNotBlamed) {
  EndingRun run;
  run.idle_nodes(5);
  for (int i = 1; i <= 3; ++i)
    run.slurm.shown_nodes["node-" + std::to_string(i)] = {
        {"NodeAddr", "10.11.0." + std::to_string(i)}};
  run.runs_then_ends(
      "node-1:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2<4711> with "
      "error 12\nnode-3:51234:51240 [1] NCCL WARN NET/IB : Got completion from peer "
      "10.11.0.2<4711> with error 12\ntorch.distributed.DistBackendError: NCCL error\n",
      "FAILED");
  ASSERT_EQ(run.slurm.submitted.size(), 1u);
  EXPECT_NE(run.submitted().find("--exclude=node-2 "), std::string::npos) << run.submitted();
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-2", 1}}));
}

// One NCCL crash, seen first in the log while the task ran and then as the task's end, is one
// incident on the node it names (#26.3: it was charged twice, which alone reached the ledger's
// threshold and kept node-2 out of every job's restarts).
TEST(LifecycleTrust, OneCrashIsOneIncidentWhateverFindingsToldOfIt) {
  EndingRun run;
  run.runs_and_prints(
      "node-2:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2 with "
      "error 12\ntorch.distributed.DistBackendError: NCCL error in: "
      "ProcessGroupNCCL.cpp:1970\n");
  ASSERT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-2", 1}}))
      << "the crash seen while it ran is charged\n"
      << event_lines(*run.store);
  run.slurm.jobs = {run.task("FAILED")};
  run.shows_ended("FAILED");
  run.cycle(run.now + 60);
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-2", 1}}))
      << event_lines(*run.store);
}

// llmwatch first looks after squeue and scontrol have forgotten a task a person cancelled, and
// there is no accounting (a restarted daemon): slurmstepd's line in the log decides, and the
// run is left alone (#26.4: torchrun's SIGTERM traceback made it a software error, restarted).
TEST(LifecycleTrust, APersonsCancelSeenOnlyInTheLogIsNotUndone) {
  EndingRun run;
  write_file(run.log, "global_step: 1\n");
  run.slurm.jobs = {run.task("RUNNING")};
  run.cycle(run.now);
  write_file(run.log,
             "slurmstepd: error: *** JOB 7 ON node-1 CANCELLED AT 2027-01-15T08:00:00 ***\n"
             "Traceback (most recent call last):\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4711 got "
             "signal: 15\n",
             true);
  run.slurm.jobs.clear();  // squeue and scontrol forgot it; no slurmdbd
  auto r = run.cycle(run.now + 600);
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->cause, "cancelled") << f->summary;
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
}

// A person cancels a run and torchrun prints its SIGTERM traceback after slurmstepd's line, read
// (a followed log's crash wakes a cycle at once) while the tick's snapshot still shows the task
// RUNNING. Slurm said it is ending the task: the traceback is the cancel's, and the end is
// judged once it shows. Before, it was a critical crash, and the restart that waited for the
// task's end resubmitted the run the person had just cancelled (the quickstart, stop 69).
TEST(LifecycleTrust, ATracebackAfterSlurmsCancelLineIsNoCrashThoughTheTaskStillShowsRunning) {
  EndingRun run;
  write_file(run.log, "global_step: 1\n");
  run.slurm.jobs = {run.task("RUNNING")};
  run.cycle(run.now);
  write_file(run.log,
             "slurmstepd-node-1: error: *** JOB 7 ON node-1 CANCELLED AT 2027-01-15T08:00:00 ***\n"
             "Terminated\nTraceback (most recent call last):\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4711 got "
             "signal: 15\n",
             true);
  auto r = run.cycle(run.now + 5);
  EXPECT_FALSE(run.finding(r, "crashed")) << run.finding(r, "crashed")->summary;
  run.slurm.jobs = {run.task("CANCELLED")};
  run.shows_ended("CANCELLED", "0:15");
  r = run.cycle(run.now + 35);
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("(by a person)"), std::string::npos) << f->summary;
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted() << "\n" << event_lines(*run.store);
}

// llmwatch cancels hung task 7 and resubmits the run, which Slurm starts within the same second
// (task 8); later a person cancels task 8. That cancel is the person's: llmwatch's was of task 7.
// Before, any cancel of the run journaled at or after task 8's start second counted as
// llmwatch's, so the end said "(by llmwatch)" and a person's cancel behind a queued restart
// went untold (the quickstart, stop 69).
TEST(LifecycleTrust, ACancelOfTheTaskBeforeIsNotTakenForACancelOfTheTaskAfter) {
  EndingRun run;
  SlurmJob eighth = run.task("RUNNING");
  eighth.job_id = 8;
  eighth.start_time = 1'800'000'010;
  auto id = run.store->begin_action("cancel:7@1799999000", "cancel", "tr", "job:tr/hung: no step",
                                    1'800'000'010.4);
  ASSERT_TRUE(id);
  run.store->finish_action(*id, "done", "scancel 7", 1'800'000'010.5);
  write_file(run.log, "global_step: 1\n");
  run.slurm.jobs = {eighth};
  run.cycle(run.now + 20);
  eighth.state = "CANCELLED";
  run.slurm.jobs = {eighth};
  run.shows_ended("CANCELLED", "0:15", "8");
  auto r = run.cycle(run.now + 50);
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f) << event_lines(*run.store);
  EXPECT_NE(f->summary.find("task 8 ended: cancelled (by a person)"), std::string::npos)
      << f->summary;
}

// A restart whose sbatch fails is tried again after a backoff, and a run still down after the
// last try is a critical alert (#26.5: the failed row took the key for good; one sbatch timeout
// left a crashed run down with a single warning).
TEST(LifecycleTrust, AFailedRestartIsRetriedThenCalledCritical) {
  EndingRun run;
  run.slurm.submit_error = "sbatch: timed out after 30s";
  run.runs_then_ends(kSoftwareError, "FAILED");
  EXPECT_TRUE(run.slurm.submitted.empty());
  run.cycle(run.now + 60);  // within the backoff
  EXPECT_NE(event_lines(*run.store).find("restart failed"), std::string::npos)
      << event_lines(*run.store);
  EXPECT_EQ(event_lines(*run.store).find("(attempt 2)"), std::string::npos);
  run.slurm.submit_error.clear();
  run.cycle(run.now + 120);
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(event_lines(*run.store).find("restart done"), std::string::npos);
  EXPECT_NE(event_lines(*run.store).find("(attempt 2)"), std::string::npos);

  EndingRun down;
  down.slurm.submit_error = "sbatch: timed out after 30s";
  down.runs_then_ends(kSoftwareError, "FAILED");
  for (int i = 1; i <= 6; ++i) down.cycle(down.now + 30 + 300 * i);
  auto events = event_lines(*down.store);
  EXPECT_NE(events.find("restart failed 3 times for tr, no more retries"), std::string::npos)
      << events;
  int failures = 0;
  for (size_t at = 0; (at = events.find("action: restart failed:", at)) != std::string::npos; ++at)
    ++failures;
  EXPECT_EQ(failures, Store::kMaxAttempts) << events;
}

// A dry run journals what it would do without taking the key: the same finding, once dry-run
// is off, acts (#26.5).
TEST(LifecycleTrust, ADryRunDoesNotTakeTheKey) {
  EndingRun run;
  run.config.dry_run = true;
  run.runs_then_ends(kSoftwareError, "FAILED");
  EXPECT_TRUE(run.slurm.submitted.empty());
  EXPECT_NE(event_lines(*run.store).find("restart dry-run"), std::string::npos)
      << event_lines(*run.store);
  run.config.dry_run = false;
  run.cycle(run.now + 60);
  EXPECT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
}

// Two watched runs die of an unattributed GPU error in one cycle: their quick node-checks run
// at once, each within the cycle's remote budget (#26.8: one after another, with nvidia-smi
// hanging on the nodes, they overran cycle_deadline and the post-mortems were made again every
// cycle).
TEST(LifecycleTrust, TheCyclesNodeChecksRunTogetherWithinItsBudget) {
  EndingRun run("[gpu]\nenabled = true\ncollect = \"results\"\n[[job]]\nname = \"tr2\"\n");
  SlurmJob other = run.task("RUNNING");
  other.job_id = 9;
  other.name = "tr2";
  other.nodes = "node-[4-6]";
  other.std_out = run.dir / "train-9.log";
  write_file(run.log, "global_step: 1\n");
  write_file(other.std_out, "global_step: 1\n");
  run.slurm.jobs = {run.task("RUNNING"), other};
  run.cycle(run.now);
  write_file(run.log, kCudaError, true);
  write_file(other.std_out, kCudaError, true);
  run.slurm.jobs.clear();
  run.shows_ended("FAILED");
  run.slurm.shown_jobs["9"] = run.slurm.shown_jobs["7"];
  run.slurm.step_output = node_check_json("node-1", Verdict::Ok, run.now + 30);
  run.slurm.step_rendezvous = 2;
  run.cycle(run.now + 30);
  ASSERT_EQ(run.slurm.steps.size(), 2u);
  EXPECT_EQ(run.slurm.max_in_flight, 2) << "the node-checks ran one after another";
  for (auto t : run.slurm.step_timeouts)
    EXPECT_LE(t.count(), run.config.cycle_deadline.count() * 3 / 4) << "beyond the budget";
  EXPECT_EQ(run.slurm.submitted.size(), 2u) << event_lines(*run.store);
}

// A node-check that does not fit the cycle's budget is not run: the end is unknown and nothing
// acts on it; the next cycle checks, and the post-mortem is kept, not made again (#26.8).
TEST(LifecycleTrust, ANodeCheckThatDoesNotFitIsDoneNextCycle) {
  EndingRun run("[gpu]\nenabled = true\ncollect = \"results\"\n");
  run.config.cycle_deadline = Seconds(6);  // a remote budget of 4.5 s: no check fits
  run.slurm.step_output = node_check_json("node-3", Verdict::Critical, run.now + 60);
  auto r = run.runs_then_ends(kCudaError, "FAILED");
  EXPECT_TRUE(run.slurm.steps.empty());
  const Finding* f = run.finding(r, "ended");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Unknown) << f->summary;
  EXPECT_TRUE(run.slurm.submitted.empty()) << run.submitted();
  run.config.cycle_deadline = Seconds(120);
  r = run.cycle(run.now + 60);
  EXPECT_EQ(run.slurm.steps.size(), 1u);
  ASSERT_EQ(run.slurm.submitted.size(), 1u) << event_lines(*run.store);
  EXPECT_NE(run.submitted().find("--exclude=node-3 "), std::string::npos) << run.submitted();
  EXPECT_EQ(run.store->incident_counts(0), (std::map<std::string, int>{{"node-3", 1}}));
  auto events = event_lines(*run.store);
  EXPECT_EQ(events.find("\nended: task 7 ended"), events.rfind("\nended: task 7 ended"))
      << "the post-mortem was made again\n"
      << events;
}

}  // namespace
}  // namespace llmwatch
