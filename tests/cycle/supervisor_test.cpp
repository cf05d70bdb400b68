// Whole cycles through the real Supervisor, against a FakeSlurm and real log files: what the
// trust issue found, each proven on the cycle as a whole.
#include "cycle/supervisor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "alert/alert_message.h"
#include "cycle/check.h"
#include "fake_slurm.h"
#include "probes/log_growth.h"
#include "store/store.h"
#include "store_reading.h"
#include "store_test_access.h"
#include "test_util.h"
#include "util/identity.h"

namespace llmwatch {
namespace {

using testing::FakeSlurm;
using testing::TempDir;
using testing::write_file;

struct World {
  TempDir dir;
  FakeSlurm slurm;
  Config config;
  std::unique_ptr<Store> store;
  explicit World(const std::string& extra = "") {
    std::string text = "[llmwatch]\nstate_dir = \"" + dir / "state" +
                       "\"\ninterval = \"5s\"\nresolve_after_cycles = 1\n"
                       "[[alert.exec]]\nmin_severity = \"info\"\ncommand = [\"/bin/sh\", \"-c\", "
                       "\"cat >> " +
                       dir / "alerts.jsonl" + "; echo >> " + dir / "alerts.jsonl" + "\"]\n" + extra;
    auto loaded = load_config_string(text, "test.toml");
    if (!loaded.config) {
      for (const auto& e : loaded.errors) ADD_FAILURE() << e.str();
      throw std::runtime_error("bad test config");
    }
    config = *loaded.config;
    store = std::make_unique<Store>(config.state_dir);
  }
  SlurmJob& run(const std::string& name, std::int64_t id, std::int64_t start,
                const std::string& log) {
    SlurmJob j;
    j.job_id = id;
    j.name = name;
    j.user = current_user_name();
    j.state = "RUNNING";
    j.nodes = "node-1";
    j.start_time = start;
    j.std_out = log;
    j.command = "/train.sh";
    slurm.jobs.push_back(j);
    return slurm.jobs.back();
  }
  // A running task 7 of `name` whose log holds `lines`; returns the log's path.
  std::string training(const std::string& name, const std::string& lines) {
    std::string log = dir / (name + ".log");
    write_file(log, lines);
    run(name, 7, 1'700'000'000, log);
    return log;
  }
  CycleResult cycle(double now) { return Supervisor(config, *store, slurm).run_cycle(now); }
  // Tests that step time forward by hand: forget the clock reading, or the step would look
  // like a jump of the host clock (which is tested on its own below).
  CycleResult cycle_after(double now) {
    store->put("clock", "", now);
    return cycle(now);
  }
  bool firing(const std::string& key) { return testing::is_firing(*store, key); }
  std::string alerts() { return testing::read_file(dir / "alerts.jsonl"); }
  std::string events() { return testing::event_lines(*store); }
};

std::string job(const std::string& name, const std::string& extra = "") {
  return "[[job]]\nname = \"" + name + "\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n" +
         "on_hang = [\"alert\", \"cancel\"]\n" + extra;
}

// What `llmwatch stacks` prints for one python3 rank whose training thread is in `innermost`.
std::string stack(const std::string& innermost) {
  return "=== llmwatch-stack node=node-1 pid=4242 comm=python3 ===\n"
         "Traceback (most recent call first):\n"
         "  File \"/work/train.py\", line 9, in " +
         innermost + "\n";
}

bool has_kind(const CycleResult& r, const std::string& kind) {
  for (const auto& f : r.findings)
    if (f.kind == kind) return true;
  return false;
}

// The defect: a tqdm line with █ cut at byte 300 failed every end-of-cycle transaction
// ("invalid UTF-8 byte at index 300: 0xE2"): no cycle recorded, no alert delivered (other
// jobs' too), and status showed the running job as absent.
TEST(Supervisor, AMultiByteCharacterAtTheCutNeverStopsACycle) {
  World w(job("tr") + job("ghost", "on_absent = [\"alert\"]\n"));
  std::string log = w.dir / "tr.log";
  write_file(log, std::string(299, 'x') + "██████ 98%|global_step: 7\n" + "\xE2\x96 cut\n");
  w.run("tr", 7, 1'700'000'000, log);
  double now = unix_now();
  auto r = w.cycle(now);
  for (const auto& f : r.findings) EXPECT_NE(f.key, "job:tr/absent");
  auto heartbeat = nlohmann::json::parse(w.store->get("heartbeat").value_or("{}"));
  EXPECT_EQ(heartbeat.value("ts", 0.0), now);
  EXPECT_FALSE(heartbeat.contains("errors")) << heartbeat.dump();
  auto progress = JobProgress::from_json(w.store->get("progress:tr").value_or(""));
  ASSERT_TRUE(progress.step);
  EXPECT_EQ(*progress.step, 7);
  EXPECT_TRUE(w.firing("job:ghost/absent"));
  EXPECT_NE(w.alerts().find("job:ghost/absent"), std::string::npos);  // delivered
  // And the next cycle too.
  auto again = w.cycle(now + 1);
  EXPECT_FALSE(w.store->get("heartbeat").value_or("").empty());
  EXPECT_EQ(again.started, now + 1);
}

// One job's evaluation throws (here: scontrol, asked because squeue gave no batch script):
// that job is unknown, nothing acts on it, and every other job and the cycle carry on.
TEST(Supervisor, AnExceptionInOneJobStaysInThatJob) {
  World w(job("boom") + job("fine"));
  std::string log = w.dir / "fine.log";
  write_file(log, "global_step: 3\n");
  w.run("fine", 2, 1'700'000'000, log);
  w.run("boom", 3, 1'700'000'000, w.dir / "boom.log").command.clear();
  w.slurm.on_show_job = [](const std::string& id) {
    if (id == "3") throw std::runtime_error("scontrol printed something absurd");
  };
  auto r = w.cycle(unix_now());
  EXPECT_TRUE(w.firing("check:job-logs/boom/failed"));
  EXPECT_EQ(*JobProgress::from_json(w.store->get("progress:fine").value_or("")).step, 3);
  EXPECT_TRUE(w.slurm.cancelled.empty());
  EXPECT_GE(r.unknown_probes, 1);
  EXPECT_FALSE(w.store->get("heartbeat").value_or("").empty());
}

// The defect: a wall-clock jump of +10 min produced "no step progress for 10m2s", then a
// cancel and a resubmit. Idle time now follows the monotonic clock.
TEST(Supervisor, AWallClockJumpIsNotIdleTime) {
  World w(job("tr"));
  std::string log = w.training("tr", "global_step: 1\n");
  double t0 = unix_now();
  w.cycle(t0);
  auto jumped = w.cycle(t0 + 600);  // the host clock stepped forward 10 minutes
  EXPECT_FALSE(has_kind(jumped, "hung"));
  EXPECT_TRUE(has_kind(jumped, "untrusted"));  // the jump is reported
  EXPECT_TRUE(w.slurm.cancelled.empty());
  write_file(log, "global_step: 2\n", true);
  auto after = w.cycle(t0 + 601);
  EXPECT_FALSE(has_kind(after, "hung"));
  EXPECT_FALSE(has_kind(after, "hang-unknown"));
  EXPECT_TRUE(w.slurm.cancelled.empty());
}

// The same rule still catches a real hang once the clock is steady again.
TEST(Supervisor, AHangIsStillFoundWhenTheClockIsSteady) {
  World w(job("tr"));
  w.training("tr", "global_step: 1\n");
  double t0 = unix_now();
  w.cycle(t0);
  auto later = w.cycle_after(t0 + 120);
  EXPECT_TRUE(has_kind(later, "hung"));
  EXPECT_EQ(w.slurm.cancelled, std::vector<std::string>{"7"});
}

// #30: a hiccup's interval counts for stale_memory, read by the cycle from the job's settings.
// 10 s steps, one 20 s gap, then three minutes of 10 s steps: with a 2-minute memory the
// allowance is 4 x 10 s again and a hang is found 41 s after its last step; with none (the
// whole task's longest, as before) it is 4 x 20 s.
TEST(Supervisor, AHiccupOlderThanStaleMemoryNoLongerWidensTheAllowance) {
  for (const char* memory : {"2m", "0s"}) {
    World w(job("tr", "stale_memory = \"" + std::string(memory) + "\"\n") +
            "stale_factor = 4.0\nstale_floor = \"10s\"\n");
    // The test's job() sets a fixed allowance; this one adapts.
    w.config.jobs.back().stale_after.reset();
    std::string log = w.training("tr", "");
    const double t0 = unix_now();
    double t = t0;
    int step = 0;
    auto step_at = [&](double at) {
      write_file(log, "global_step: " + std::to_string(++step) + "\n", true);
      t = at;
      return w.cycle_after(at);
    };
    for (int i = 0; i < 5; ++i) step_at(t0 + 10 * i);
    w.cycle_after(t + 10);  // the hiccup: no step this cycle
    step_at(t + 20);
    for (double until = t + 180; t < until;) step_at(t + 10);
    const double last = t;
    auto later = w.cycle_after(last + 41);
    EXPECT_EQ(has_kind(later, "hung"), std::string(memory) == "2m") << "stale_memory " << memory;
  }
}

// The defect: requeue keeps the job id (scontrol requeue, preemption); the run that resumed
// from an earlier checkpoint prints lower steps, and was declared hung while it progressed.
TEST(Supervisor, ARequeuedRunResumingAtALowerStepIsNotHung) {
  World w(job("tr"));
  std::string log = w.dir / "tr.log";
  write_file(log, "global_step: 498\nglobal_step: 499\nglobal_step: 500\n");
  SlurmJob& task = w.run("tr", 7, 1'700'000'000, log);
  double t0 = unix_now();
  w.cycle(t0);
  task.start_time = 1'700'000'900;  // requeued: same id, started again
  write_file(log, "resuming from step 400\nglobal_step: 401\n", true);
  auto r = w.cycle_after(t0 + 90);
  EXPECT_FALSE(has_kind(r, "hung")) << r.findings.front().summary;
  EXPECT_TRUE(w.slurm.cancelled.empty());
  auto p = JobProgress::from_json(w.store->get("progress:tr").value_or(""));
  EXPECT_EQ(p.task_start, 1'700'000'900);
  EXPECT_EQ(*p.step, 401);
}

// The defect: tqdm/Lightning bars written with '\r' only were never split into lines, so a
// run whose step advanced was reported hung and cancelled.
TEST(Supervisor, AProgressBarWrittenWithCarriageReturnsIsProgress) {
  World w(job("tr"));
  std::string log = w.dir / "tr.log";
  write_file(log, testing::read_file(testing::fixture("training-logs/nemo1-progress-bar-cr.log")));
  w.run("tr", 7, 1'700'000'000, log);
  double t0 = unix_now();
  w.cycle(t0);
  ASSERT_EQ(*JobProgress::from_json(w.store->get("progress:tr").value_or("")).step, 98);
  // 50 s later the bar redrew once more (no newline, as always).
  write_file(log, "\rEpoch 0: 100%|█| 100/100 [07:56<00:00, global_step=100.00]", true);
  testing::set_mtime(log, t0 + 50);
  w.cycle_after(t0 + 50);
  auto r = w.cycle_after(t0 + 100);  // 50 s after that redraw: within stale_after (60 s)
  EXPECT_FALSE(has_kind(r, "hung"));
  EXPECT_TRUE(w.slurm.cancelled.empty());
}

// A run read at t0, then `lines` written at t0+10 and seen by the daemon's look at the log's
// growth, then a hung rank's heartbeat at t0+25, and the read at t0+30.
double written_then_heartbeat(World& w, const std::string& log, const std::string& lines) {
  double t0 = unix_now();
  testing::set_mtime(log, t0 - 5);
  w.cycle(t0);
  write_file(log, lines, true);
  testing::set_mtime(log, t0 + 10);
  log_growth().sample(std::chrono::seconds(2));  // the daemon's look between the two reads
  write_file(log, "heartbeat: still waiting in ALLREDUCE\n", true);
  testing::set_mtime(log, t0 + 25);
  w.cycle_after(t0 + 30);
  return t0;
}

// #30: a hung rank's heartbeats after the last step, read with it, moved the log's mtime on,
// and the step was clocked at the last heartbeat: the hang was found up to an interval late.
// With the log's growth sampled between the reads (the daemon does, every kLogSampleEvery),
// the step is clocked at the sample that first held it; without samples, as before.
TEST(Supervisor, AStepIsClockedAtItsOwnWriteNotAtTheHeartbeatsAfterIt) {
  World w(job("tr"));
  std::string log = w.training("tr", "global_step: 1\n");
  double t0 = written_then_heartbeat(w, log, "global_step: 2\n");
  auto p = JobProgress::from_json(w.store->get("progress:tr").value_or(""));
  EXPECT_EQ(*p.step, 2);
  EXPECT_DOUBLE_EQ(p.last_progress, t0 + 10);
  // No sample held the next step: its read's mtime clocks it, as before.
  write_file(log, "global_step: 3\nheartbeat: still waiting in ALLREDUCE\n", true);
  testing::set_mtime(log, t0 + 55);
  w.cycle_after(t0 + 60);
  p = JobProgress::from_json(w.store->get("progress:tr").value_or(""));
  EXPECT_EQ(*p.step, 3);
  EXPECT_DOUBLE_EQ(p.last_progress, t0 + 55);
}

// The same for a save right after the last step (the hang bench's trainer saves every 5 steps):
// its end was clocked at the heartbeats too, and the allowance counts from a save's end, so the
// hang was found 10 s late (55 s).
TEST(Supervisor, ASaveIsClockedAtItsOwnWriteNotAtTheHeartbeatsAfterIt) {
  World w(job("tr"));
  std::string log = w.training("tr", "global_step: 1\n");
  double t0 = written_then_heartbeat(
      w, log,
      "global_step: 2\n"
      "[NeMo I 2026-11-25 16:30:33 nemo_logging:393] Saving checkpoint at step 2\n"
      "[NeMo I 2026-11-25 16:30:33 nemo_logging:393] Global Checkpoint Save : Rank: 0 : "
      "Iteration: 2 : Start time: 1795624233.000s : Save duration: 0.012s\n");
  auto p = JobProgress::from_json(w.store->get("progress:tr").value_or(""));
  EXPECT_DOUBLE_EQ(p.last_progress, t0 + 10);
  EXPECT_DOUBLE_EQ(p.checkpoint_done, t0 + 10);
}

// An unknown Slurm never makes a job absent.
TEST(Supervisor, ASlurmThatDoesNotAnswerIsNeverAbsence) {
  World w(job("tr", "on_absent = [\"restart\"]\n"));
  w.slurm.queue_error = "squeue --json: output over 64 MiB was cut; not trusted";
  auto r = w.cycle(unix_now());
  EXPECT_FALSE(has_kind(r, "absent"));
  EXPECT_TRUE(w.slurm.submitted.empty());
}

// #27: a misspelled [[job]] name was only "absent". A cycle names the user's queued job
// the name was likely meant to be.
TEST(Supervisor, AnAbsentJobNamesTheQueuedJobItWasLikelyMeantToBe) {
  World w(job("mytrian", "user = \"" + current_user_name() + "\"\n"));
  w.run("mytrain", 7, 1'700'000'000, w.dir / "t.log");
  auto r = w.cycle(unix_now());
  std::string summary;
  for (const auto& f : r.findings)
    if (f.kind == "absent") summary = f.summary;
  EXPECT_NE(summary.find("Slurm has a job named 'mytrain'"), std::string::npos) << summary;
  EXPECT_NE(w.alerts().find("is the [[job]] name misspelled?"), std::string::npos);
}

// The defect: the switch to the text format was forgotten by the next cycle (a new
// SlurmClient), so every cycle paid for a JSON document too big to use.
TEST(Supervisor, TheSlurmFormatChoiceIsKept) {
  World w(job("tr"));
  w.slurm.use_text_mode();  // as a too-big JSON queue makes it choose
  w.cycle(unix_now());
  FakeSlurm fresh;
  EXPECT_FALSE(fresh.text_mode());
  Supervisor(w.config, *w.store, fresh).run_cycle(unix_now());
  EXPECT_TRUE(fresh.text_mode());
}

// The defect: an action whose outcome was never recorded (killed, disk full) stayed
// `intent` forever and nobody was told. Now it is reconciled and raised, never rerun.
TEST(Supervisor, AnActionLeftAsIntentIsReconciledAndRaised) {
  World w(job("tr"));
  w.training("tr", "global_step: 1\n");
  double now = unix_now();
  auto id = w.store->begin_action("cancel:7", "cancel", "tr", "job:tr/hung: test", now - 60);
  ASSERT_TRUE(id);
  auto r = w.cycle(now);
  bool raised = false;
  for (const auto& f : r.findings)
    if (f.key == "journal:" + std::to_string(*id) + "/unconfirmed") {
      raised = true;
      EXPECT_NE(f.summary.find("cancel of tr may or may not have run"), std::string::npos);
      EXPECT_EQ(f.evidence.back(), "Slurm shows 7 RUNNING now");
    }
  EXPECT_TRUE(raised);
  for (const auto& a : w.store->recent_actions(10)) {
    if (a.id == *id) {
      EXPECT_EQ(a.state, "unknown");
    }
  }
  EXPECT_TRUE(w.store->unfinished_actions(now + 1).empty());
  EXPECT_TRUE(w.slurm.cancelled.empty());
}

// The defect: when a cycle outlived lease_ttl, a second supervisor took the lease and both
// acted. Now the first asks before every action and, deposed, acts on nothing and sends
// nothing; what it saw is still recorded, and the holder does the work once.
TEST(Supervisor, ADeposedSupervisorActsOnNothing) {
  World w(job("ghost", "on_absent = [\"alert\", \"restart\"]\n"));
  w.slurm.jobs.clear();
  double now = unix_now();
  int asked = 0;
  Fence deposed = [&] {
    ++asked;
    return std::string("the lease was taken over by host-b:42");
  };
  auto r = Supervisor(w.config, *w.store, w.slurm, deposed).run_cycle(now);
  EXPECT_GE(asked, 1);
  EXPECT_TRUE(has_kind(r, "absent"));  // observed and recorded...
  EXPECT_TRUE(w.firing("job:ghost/absent"));
  EXPECT_EQ(r.actions, 0);  // ...but nothing journaled, run or sent
  EXPECT_TRUE(w.store->recent_actions(10).empty());
  EXPECT_TRUE(w.slurm.submitted.empty());
  EXPECT_EQ(w.alerts(), "");
  auto heartbeat = nlohmann::json::parse(w.store->get("heartbeat").value_or("{}"));
  EXPECT_NE(heartbeat.dump().find("not acting: the lease was taken over"), std::string::npos)
      << heartbeat.dump();
  // The lease holder's next cycle acts, once.
  w.cycle(now + 5);
  EXPECT_NE(w.alerts().find("job:ghost/absent"), std::string::npos);
}

// The defect: an alert was journaled as begun, then queueing it failed (a full disk, a
// crash): the journal said "once per episode", so the first announcement was lost until
// the 6-hour repeat. The journal entry and the outbox rows are now one transaction.
TEST(Supervisor, AnAlertIsJournaledOnlyTogetherWithItsDelivery) {
  World w(job("ghost", "on_absent = [\"alert\"]\n"));
  w.slurm.jobs.clear();
  StoreTestAccess::db(*w.store).exec(
      "CREATE TRIGGER full BEFORE INSERT ON deliveries BEGIN "
      "SELECT RAISE(FAIL, 'database or disk is full'); END");
  double now = unix_now();
  w.cycle(now);
  EXPECT_TRUE(w.firing("job:ghost/absent"));
  EXPECT_TRUE(w.store->recent_actions(10).empty());  // neither journaled nor queued
  EXPECT_EQ(w.alerts(), "");
  StoreTestAccess::db(*w.store).exec("DROP TRIGGER full");
  w.cycle(now + 5);  // space again: the first announcement goes out now, not in 6 hours
  EXPECT_NE(w.alerts().find("job:ghost/absent"), std::string::npos);
  auto actions = w.store->recent_actions(10);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].state, "done");
}

// Hang forensics: with the default on_hang the stacks of every rank are taken before the
// cancel, and the alert says where the ranks wait (before: cancelled with no record).
TEST(Supervisor, AHungRunsStacksAreTakenBeforeItIsCancelled) {
  World w(
      "[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n"
      "confirm_hang = \"0s\"\n");  // one dump, then the cancel (the confirmed path: below)
  w.training("tr", "global_step: 1\n");
  w.slurm.step_output =
      "=== llmwatch-stack node=node-1 pid=4242 comm=python3 ===\n"
      "Traceback (most recent call first):\n"
      "  File \"/work/train.py\", line 4, in allreduce_wait\n";
  double now = unix_now();
  w.cycle_after(now);
  auto r = w.cycle_after(now + 120);
  ASSERT_TRUE(has_kind(r, "hung"));
  ASSERT_EQ(w.slurm.steps.size(), 1u);
  EXPECT_EQ(w.slurm.steps[0][0], "--jobid=7");
  EXPECT_EQ(w.slurm.cancelled, std::vector<std::string>{"7"});
  EXPECT_NE(w.alerts().find("1 process: 1 in allreduce_wait (train.py:4)"), std::string::npos)
      << w.alerts();
  auto kept = nlohmann::json::parse(w.store->get("stacks:tr").value_or("{}"));
  EXPECT_NE(testing::read_file(kept.value("file", "")).find("allreduce_wait"), std::string::npos);
}

// The defect: a near miss restarted the hang clock at the start of the cycle that took the two
// dumps. A slow confirmation (dumps under load, 2 x gdb, the wait) could outlast the whole
// allowance, so the very next cycle found the run "hung" again and cancelled it. The clock now
// restarts when the run was seen moving. The cycle here starts 100 s before the wall clock,
// as a cycle would whose dumps took that long.
TEST(Supervisor, ANearMissRestartsTheHangClockWhenTheRunWasSeenMoving) {
  World w(
      "[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n"
      "confirm_hang = \"1s\"\n");
  w.training("tr", "global_step: 1\n");
  w.slurm.step_outputs = {stack("evaluate"), stack("forward")};  // it moves
  double t0 = unix_now() - 220;
  w.cycle_after(t0);
  auto r = w.cycle_after(t0 + 120);  // hung by the log: the first dump
  ASSERT_TRUE(has_kind(r, "hung"));
  w.cycle_after(t0 + 121);  // the second; 100 s of wall clock "left" in the cycle
  EXPECT_NE(w.events().find("near miss"), std::string::npos) << w.events();
  EXPECT_TRUE(w.slurm.cancelled.empty());
  w.slurm.step_outputs = {stack("forward"), stack("forward")};
  w.cycle_after(t0 + 200);  // 80 s after the near-miss cycle began, 20 s before it saw the run move
  EXPECT_TRUE(w.slurm.cancelled.empty()) << w.events();
}

// A running task 7 of "tr" (60 s allowed, hangs confirmed 1 s apart) found hung at t0 + 120
// whose two dumps see its stacks move: a near miss at t0 + 121, the wall clock's now. Returns
// its log through `log` and t0 through `t0`.
const char* const kConfirmedTr =
    "[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n"
    "confirm_hang = \"1s\"\n";
void near_miss(World& w, std::string& log, double& t0) {
  log = w.training("tr", "global_step: 1\n");
  t0 = unix_now() - 121;
  w.slurm.step_outputs = {stack("evaluate"), stack("forward")};  // it moves
  w.cycle_after(t0);
  ASSERT_TRUE(has_kind(w.cycle_after(t0 + 120), "hung"));
  w.cycle_after(t0 + 121);
  ASSERT_NE(w.events().find("near miss"), std::string::npos) << w.events();
}

// A near miss is spent until the run steps again, not for the rest of its task. The defect: a
// healthy run whose stacks were seen moving through one long silence, which then stepped on for
// hours, was cancelled on time alone at its next long silence (no second benefit of the doubt in
// that task), though its stacks moved again. A run that never steps after its near miss (stacks
// that move in a retry loop) is still cancelled at the next hang.
TEST(Supervisor, ANearMissIsSpentUntilTheRunStepsAgainNotForItsWholeTask) {
  World w(kConfirmedTr);
  std::string log;
  double t0 = 0;
  ASSERT_NO_FATAL_FAILURE(near_miss(w, log, t0));
  // It steps on, then falls silent again, its stacks moving again.
  write_file(log, "global_step: 2\n", true);
  w.cycle_after(t0 + 130);
  w.slurm.step_outputs = {stack("load_shard"), stack("forward")};
  ASSERT_TRUE(has_kind(w.cycle_after(t0 + 200), "hung"));
  w.cycle_after(t0 + 201);
  EXPECT_TRUE(w.slurm.cancelled.empty()) << w.events();
  EXPECT_EQ(testing::count_of(w.events(), "near miss: the stacks moved"), 2) << w.events();
  // No step since: the next hang is not given the benefit of the doubt again.
  w.slurm.step_outputs = {stack("retry"), stack("forward")};
  ASSERT_TRUE(has_kind(w.cycle_after(t0 + 300), "hung"));
  w.cycle_after(t0 + 301);
  EXPECT_EQ(w.slurm.cancelled, std::vector<std::string>{"7"}) << w.events();
}

// The titles the alert channel was given about `key`, in order ("[CRITICAL] job:tr/hung — ...",
// "[RESOLVED] ..."), grouped messages opened.
std::vector<std::string> told_about(const std::string& alerts, const std::string& key) {
  std::vector<std::string> titles;
  std::istringstream in(alerts);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    AlertMessage m = AlertMessage::from_json(line);
    std::vector<std::string> each = m.grouped.empty() ? std::vector{m.title()} : m.grouped;
    for (const auto& title : each)
      if (title.find("] " + key + " ") != std::string::npos) titles.push_back(title);
  }
  return titles;
}

// A near miss is no page. The defect: on_hang's alert ran after the dump disproved the hang, at
// the hang's own severity ("[CRITICAL] ... hung"), and a "[RESOLVED]" followed once the run
// stepped: a person was woken for a run that was never hung. It is told at info (for channels
// that take info), and nothing is resolved that no one was paged for.
TEST(Supervisor, ANearMissIsToldAtInfoNotPagedAsAHangAndNeverResolved) {
  World w(kConfirmedTr);
  std::string log;
  double t0 = 0;
  ASSERT_NO_FATAL_FAILURE(near_miss(w, log, t0));
  // No longer firing once disproved: status and llmwatch_alerts_firing showed a critical hang
  // for resolve_after_cycles more cycles.
  EXPECT_FALSE(w.firing("job:tr/hung")) << w.events();
  write_file(log, "global_step: 2\n", true);  // it steps on
  for (double t = t0 + 130; t <= t0 + 150; t += 10) w.cycle_after(t);
  ASSERT_FALSE(w.firing("job:tr/hung")) << w.events();
  auto told = told_about(w.alerts(), "job:tr/hung");
  ASSERT_EQ(told.size(), 1u) << w.alerts();
  EXPECT_EQ(told[0].rfind("[INFO] job:tr/hung — disproved, nothing done: 7: no step", 0), 0u)
      << told[0];
  EXPECT_NE(w.alerts().find("near miss: the stacks moved"), std::string::npos) << w.alerts();
  EXPECT_NE(w.alerts().find("\"notice\":true"), std::string::npos) << w.alerts();
  EXPECT_TRUE(w.slurm.cancelled.empty());
}

// A hang that follows a near miss is another episode. The defect: the finding stayed one firing
// episode (a run that never stepped after its near miss, hung again within
// resolve_after_cycles), so the second hang's dump and alert were journaled already: the run was
// cancelled and restarted undumped, and no one was told. The disproved finding is now resolved
// in the cycle that disproved it, so the next hang is a new one.
TEST(Supervisor, AHangRightAfterANearMissIsDumpedAndToldBeforeItIsCancelled) {
  World w(kConfirmedTr);
  std::string log;
  double t0 = 0;
  ASSERT_NO_FATAL_FAILURE(near_miss(w, log, t0));
  // No step since, and no cycle saw it un-hung: the next cycle finds it hung again.
  w.slurm.step_outputs = {stack("retry"), stack("retry")};
  ASSERT_TRUE(has_kind(w.cycle_after(t0 + 200), "hung"));
  w.cycle_after(t0 + 201);
  EXPECT_EQ(w.slurm.cancelled, std::vector<std::string>{"7"}) << w.events();
  EXPECT_EQ(testing::count_of(w.events(), "dump done"), 2u) << w.events();
  // Told: the near miss at info, then the hang at critical (then resolved, its task gone).
  auto told = told_about(w.alerts(), "job:tr/hung");
  ASSERT_EQ(told.size(), 3u) << w.alerts();
  EXPECT_EQ(told[0].rfind("[INFO] job:tr/hung — disproved", 0), 0u) << told[0];
  EXPECT_EQ(told[1].rfind("[CRITICAL] job:tr/hung — 7: no step", 0), 0u) << told[1];
  EXPECT_EQ(told[2].rfind("[RESOLVED] job:tr/hung", 0), 0u) << told[2];
  EXPECT_NE(w.alerts().find("cancel: done — scancel 7"), std::string::npos) << w.alerts();
}

// A silence the run was seen alive through (a near miss), once it steps again, is a healthy
// interval: the same silence later in the task is no hang finding, and no two more dumps and an
// alert. The defect: that silence, longer than the allowance, was never learned, so each return
// was found "hung", dumped twice and announced. A real hang is still found, at 4 x the silence.
TEST(Supervisor, ASilenceANearMissSawTheRunAliveThroughIsLearned) {
  World w(
      "[[job]]\nname = \"tr\"\nstartup_grace = \"60s\"\nstale_factor = 4.0\n"
      "stale_floor = \"10s\"\nconfirm_hang = \"1s\"\non_hang = [\"dump\", \"alert\", "
      "\"cancel\"]\n");
  std::string log = w.training("tr", "");
  const double t0 = unix_now() - 92;  // the near miss is seen moving at the wall clock's now
  int step = 0;
  auto step_at = [&](double at) {
    write_file(log, "global_step: " + std::to_string(++step) + "\n", true);
    testing::set_mtime(log, 1);  // clocked at the read (an mtime before it cannot be the write)
    return w.cycle_after(at);
  };
  for (int i = 0; i < 6; ++i) step_at(t0 + 10 * i);              // 10 s steps: allowed 40 s
  w.slurm.step_outputs = {stack("evaluate"), stack("forward")};  // it moves
  for (double t = t0 + 60; t <= t0 + 90; t += 10) w.cycle_after(t);
  ASSERT_TRUE(has_kind(w.cycle_after(t0 + 91), "hung"));
  w.cycle_after(t0 + 92);
  ASSERT_EQ(testing::count_of(w.events(), "near miss: the stacks moved"), 1u) << w.events();
  for (int i = 0; i < 4; ++i) step_at(t0 + 100 + 10 * i);  // it steps on
  // The same silence again: within what was learned.
  for (double t = t0 + 140; t <= t0 + 185; t += 5)
    EXPECT_FALSE(has_kind(w.cycle_after(t), "hung")) << "at t0+" << t - t0 << "\n" << w.events();
  EXPECT_EQ(testing::count_of(w.events(), "first dump kept"), 1u) << w.events();
  EXPECT_TRUE(w.slurm.cancelled.empty());
  // A real hang: found once the learned silence's allowance runs out.
  EXPECT_TRUE(has_kind(w.cycle_after(t0 + 130 + 4 * 60), "hung")) << w.events();
}

// The same in the start-up phase (#15): a run that printed no step yet was measured from when
// its task was first seen, so the near miss did not restart its clock: the next cycle found it
// "hung" again, its one near miss spent, and cancelled it.
TEST(Supervisor, ANearMissBeforeTheFirstStepRestartsTheStartupClock) {
  World w(
      "[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n"
      "confirm_hang = \"1s\"\n");
  double t0 = unix_now() - 220;
  std::string log = w.dir / "tr.log";
  write_file(log, "compiling the model\n");
  w.run("tr", 7, static_cast<std::int64_t>(t0), log);
  w.slurm.step_outputs = {stack("load_shard"), stack("compile")};  // it moves
  w.cycle_after(t0);
  auto r = w.cycle_after(t0 + 120);
  ASSERT_TRUE(has_kind(r, "hung"));
  w.cycle_after(t0 + 121);
  EXPECT_NE(w.events().find("near miss"), std::string::npos) << w.events();
  EXPECT_TRUE(w.slurm.cancelled.empty());
  w.slurm.step_outputs = {stack("compile"), stack("compile")};
  r = w.cycle_after(t0 + 200);
  EXPECT_FALSE(has_kind(r, "hung")) << w.events();
  EXPECT_TRUE(w.slurm.cancelled.empty()) << w.events();
}

// confirm_hang's wait is not a sleep inside the cycle (it held up every other job of the cycle,
// and the cycle's deadline): the cycle that finds the hang takes the first dump only, and
// cancels nothing; a later cycle, once confirm_hang has passed, takes the second. Stacks that
// did not move confirm the hang: the run is cancelled then, with the second dump kept.
TEST(Supervisor, AHangIsConfirmedByASecondDumpInALaterCycle) {
  World w(
      "[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n"
      "confirm_hang = \"10s\"\n");
  w.training("tr", "global_step: 1\n");
  std::string stuck =
      "=== llmwatch-stack node=node-1 pid=4242 comm=python3 ===\n"
      "Traceback (most recent call first):\n"
      "  File \"/work/train.py\", line 9, in allreduce_wait\n";
  w.slurm.step_outputs = {stuck, stuck};
  double t0 = unix_now() - 220;
  w.cycle_after(t0);
  auto r = w.cycle_after(t0 + 120);
  ASSERT_TRUE(has_kind(r, "hung"));
  EXPECT_EQ(w.slurm.steps.size(), 1u) << "one dump in the cycle that found the hang";
  EXPECT_TRUE(w.slurm.cancelled.empty()) << w.events();
  EXPECT_NE(w.events().find("first dump kept"), std::string::npos) << w.events();
  w.cycle_after(t0 + 125);  // confirm_hang has not passed: no dump, no cancel
  EXPECT_EQ(w.slurm.steps.size(), 1u);
  EXPECT_TRUE(w.slurm.cancelled.empty()) << w.events();
  w.cycle_after(t0 + 131);
  EXPECT_EQ(w.slurm.steps.size(), 2u);
  EXPECT_EQ(w.slurm.cancelled.size(), 1u) << w.events();
  EXPECT_EQ(w.events().find("near miss"), std::string::npos) << w.events();
}

// A dump with no rank's Python frames (not a Python run, no debug symbols) cannot be confirmed
// by a second: the hang is acted on after the one dump, not 10 s later for nothing.
TEST(Supervisor, AHangWithoutPythonFramesIsNotWaitedOn) {
  World w("[[job]]\nname = \"tr\"\nstale_after = \"60s\"\nstartup_grace = \"60s\"\n");
  w.training("tr", "global_step: 1\n");
  w.slurm.step_output =
      "=== llmwatch-stack node=node-1 pid=4242 comm=bash ===\n(no Python stack)\n";
  double t0 = unix_now() - 220;
  w.cycle_after(t0);
  ASSERT_TRUE(has_kind(w.cycle_after(t0 + 120), "hung"));
  EXPECT_EQ(w.slurm.cancelled.size(), 1u) << w.events();
}

TEST(Checks, EveryCheckRegistersItselfOnce) {
  auto names = check_names();
  for (const char* expected :
       {"clock", "job-logs", "node-health", "self-chain", "slurm", "storage"})
    EXPECT_EQ(std::count(names.begin(), names.end(), expected), 1) << expected;
}

// [[check]]: an operator's Nagios plugin. Its exit status is the verdict, its first line the
// summary; between runs (every) the verdict stands; a hang is unknown and never acts.
TEST(Supervisor, NagiosChecksFireWaitTheirTurnAndResolve) {
  TempDir tmp;
  std::string script = tmp / "check.sh", verdict = tmp / "verdict";
  write_file(script,
             "n=$(cat " + verdict +
                 ")\n[ \"$n\" = hang ] && exec sleep 30\n"
                 "echo \"LUSTRE $n - mdt0 slow | t=3\"\necho 'ost7: 2 s per stat'\nexit $n\n");
  World w("[[check]]\nname = \"lustre\"\ncommand = [\"/bin/sh\", \"" + script +
          "\"]\nevery = \"60s\"\ntimeout = \"1s\"\n");
  auto firing = [&]() -> std::optional<FindingRow> {
    for (const auto& f : w.store->firing())
      if (f.key == "check:lustre/status") return f;
    return std::nullopt;
  };
  double now = 1'800'000'000;
  write_file(verdict, "2");
  w.cycle(now);
  ASSERT_TRUE(firing());
  EXPECT_EQ(firing()->severity, "critical");
  EXPECT_EQ(firing()->summary, "LUSTRE 2 - mdt0 slow");
  // It passes now, but is not due for 60 s: the verdict stands, nothing resolves.
  write_file(verdict, "0");
  w.cycle(now + 10);
  EXPECT_TRUE(firing());
  w.cycle(now + 70);
  EXPECT_FALSE(firing());
  // A plugin that hangs is killed at its timeout: unknown, never an action.
  write_file(verdict, "hang");
  auto r = w.cycle(now + 140);
  ASSERT_TRUE(firing());
  EXPECT_EQ(firing()->severity, "unknown");
  EXPECT_NE(firing()->summary.find("timed out"), std::string::npos) << firing()->summary;
  EXPECT_EQ(r.actions, 0);
}

TEST(Supervisor, NagiosCheckConfigIsChecked) {
  auto errors = [](const std::string& toml) {
    std::string out;
    for (const auto& e : load_config_string(toml, "c.toml").errors) out += e.str() + "\n";
    return out;
  };
  EXPECT_EQ(errors("[[check]]\nname = \"ok\"\ncommand = [\"/bin/true\"]\n"), "");
  EXPECT_NE(errors("[[check]]\nname = \"a b\"\ncommand = [\"/bin/true\"]\n").find("needs a name"),
            std::string::npos);
  EXPECT_NE(errors("[[check]]\nname = \"x\"\n").find("needs command"), std::string::npos);
  EXPECT_NE(errors("[[check]]\nname = \"x\"\ncommand = [\"/bin/true\"]\ntimeout = \"0s\"\n")
                .find("must be at least 1s"),
            std::string::npos);
}

}  // namespace
}  // namespace llmwatch
