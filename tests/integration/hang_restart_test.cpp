// Job supervision end to end on a real cluster with the fake trainer from examples/:
// a run that hangs (alive, printing heartbeats, no new step) is detected, its task is
// cancelled, and the run resumes on the next array task past the old step.
#include "local_cluster.h"
#include "slurm/hostlist.h"
#include "store/store.h"

namespace llmwatch::testing {
namespace {

struct TrainingRun {
  LocalCluster& cluster;
  std::string work;
  std::string config;

  explicit TrainingRun(LocalCluster& c, const std::string& extra_job_keys = "",
                       const std::string& extra = "")
      : cluster(c), work(c.dir / "work"), config(c.dir / "llmwatch.toml") {
    std::filesystem::create_directories(work);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\ninterval = \"1s\"\n" + extra +
                           "[slurm]\ntimeout = \"5s\"\n"
                           "[[job]]\n" +
                           job_owner() +
                           "name = \"itest-train\"\nstale_floor = \"6s\"\nfirst_steps_grace = "
                           "\"6s\"\nstale_ceiling = \"1m\"\n"
                           "startup_grace = \"1m\"\nkill_switch = \"" +
                           work + "/kill-switch\"\n" + extra_job_keys);
  }

  std::string submit(const std::string& array = "1-4%1", const std::string& env = "") {
    auto r = cluster.slurm({"sbatch", "--parsable", "--job-name=itest-train", "--array=" + array,
                            "--chdir=" + work, "--output=" + work + "/train-%A_%a.out",
                            "--export=ALL,FAKE_TRAINER_DIR=" + work + ",FAKE_STEP_TIME=0.5" + env,
                            source_dir() + "/examples/fake-trainer.sh"});
    EXPECT_TRUE(r.ok()) << r.describe("sbatch") << r.err;
    return r.out.substr(0, r.out.find_first_of(";\n"));
  }

  nlohmann::json cycle_and_status() {
    auto run = llmwatch(config, {"run", "--once"});
    EXPECT_TRUE(run.ok()) << run.describe("run --once") << run.err;
    auto status = llmwatch(config, {"status", "--json"});
    auto s = nlohmann::json::parse(status.out, nullptr, false);
    return s.is_object() ? s : nlohmann::json::object();
  }

  nlohmann::json job() {
    auto s = cycle_and_status();
    return s.contains("jobs") && !s["jobs"].empty() ? s["jobs"][0] : nlohmann::json::object();
  }

  std::string events() { return llmwatch(config, {"events", "--json"}).out; }

  // Cycles until the events hold `text` (`seconds` at most).
  bool cycled_until(const std::string& text, int seconds) {
    return eventually(
        [&] {
          cycle_and_status();
          return events().find(text) != std::string::npos;
        },
        seconds);
  }

  // Cycles until the run has stepped to `step` (90 s at most); `j` is its status then.
  bool stepped_to(int step, nlohmann::json& j) {
    return eventually(
        [&] {
          j = job();
          return j.value("step", 0) >= step;
        },
        90);
  }
};

TEST(HangRestart, HungRunIsCancelledAndResumesOnTheNextArrayTask) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TrainingRun run(c);
  run.submit();

  nlohmann::json j;
  ASSERT_TRUE(run.stepped_to(4, j)) << j.dump();
  std::string task = j["task"];
  // The ledger holds every node but one with two incidents (#30): the array's next task, which
  // Slurm starts by itself, is kept off them. Before, it started on any of them.
  std::string hung_on;
  for (const auto& e : c.jobs())
    if (e.value("job_state", "") == "RUNNING") hung_on = e.value("nodes", "");
  ASSERT_FALSE(hung_on.empty()) << c.jobs().dump();
  const std::string free_node = hung_on == "node-4" ? "node-3" : "node-4";
  std::vector<std::string> suspects;
  {
    Store store(c.dir / "state");
    for (const char* node : {"node-1", "node-2", "node-3", "node-4"}) {
      if (node == free_node) continue;
      suspects.push_back(node);
      for (int i = 0; i < 2; ++i)
        store.add_incident(unix_now() - 600 + i, node, "90@" + std::to_string(i),
                           "itest-train crashed, attributed to " + std::string(node));
    }
  }
  write_file(run.work + "/hang", task.substr(task.find('_') + 1));

  // Detected: a hung finding and a cancel of exactly that task.
  ASSERT_TRUE(run.cycled_until("job:itest-train/hung", 60)) << run.events();
  std::string events = run.events();
  // Before the cancel: Slurm starts the next task within a second of it.
  EXPECT_NE(events.find("cancel done: scancel " + task + "; its next task excluding " +
                        compress_hostlist(suspects)),
            std::string::npos)
      << events;
  EXPECT_NE(events.find("starts by itself"), std::string::npos) << events;
  auto hung_step = run.job().value("best_step", 0);

  // The next task runs and trains past the hung step.
  ASSERT_TRUE(eventually(
      [&] {
        j = run.job();
        bool running = false;
        for (const auto& e : j["entries"]) running |= e["state"] == "RUNNING";
        return running && j["task"] != task && j.value("step", 0) > hung_step;
      },
      90))
      << j.dump();
  for (const auto& e : c.jobs()) {
    if (e.value("job_state", "") == "RUNNING") {
      EXPECT_EQ(e.value("nodes", ""), free_node);
    }
  }

  // The hang is resolved (after the resolve hysteresis) and no second cancel happened.
  run.cycle_and_status();
  run.cycle_and_status();
  events = run.events();
  EXPECT_NE(events.find("job:itest-train/hung resolved"), std::string::npos) << events;
  size_t cancels = 0;
  for (size_t pos = 0; (pos = events.find("cancel done", pos)) != std::string::npos; ++pos)
    ++cancels;
  EXPECT_EQ(cancels, 1u);
}

// The requeue action on the real cluster: Slurm starts a requeued task under the same id, and
// opens its output file anew then, truncated (stop 66: a job logging to a fixed name kept only
// its second start's line). The hung run's lines are kept before the requeue.
TEST(HangRestart, ARequeuedRunsLogIsKeptBeforeSlurmStartsItAgain) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TrainingRun run(c, "on_hang = [\"requeue\"]\n");
  const std::string log = run.work + "/train.out";
  auto r = c.slurm({"sbatch", "--parsable", "--requeue", "--job-name=itest-train",
                    "--chdir=" + run.work, "--output=" + log,
                    "--export=ALL,FAKE_TRAINER_DIR=" + run.work + ",FAKE_STEP_TIME=0.5",
                    source_dir() + "/examples/fake-trainer.sh"});
  ASSERT_TRUE(r.ok()) << r.describe("sbatch") << r.err;
  const std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  nlohmann::json j;
  ASSERT_TRUE(run.stepped_to(4, j)) << j.dump();
  write_file(run.work + "/hang", "job " + id);
  ASSERT_TRUE(run.cycled_until("requeue done", 60)) << run.events();
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(c.dir / "state/requeued-logs"))
    kept.push_back(e.path().string());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(std::filesystem::path(kept[0]).filename().string().rfind(id + "-", 0), 0u) << kept[0];
  std::string copy = read_file(kept[0]);
  EXPECT_NE(copy.find("heartbeat: still waiting in ALLREDUCE"), std::string::npos) << copy;
  EXPECT_NE(copy.find("global_step: 4 "), std::string::npos) << copy;
  EXPECT_NE(run.events().find("kept in " + kept[0]), std::string::npos) << run.events();
}

// A cancel that slurmctld did not keep (killed right after scancel returned: the chaos soak's
// hung task was still RUNNING 55 s later) is issued again on the real cluster. The lost cancel is
// journaled as llmwatch journals a done one; the task, RUNNING, is then cancelled for real and
// the array's next task takes over. Before, the done key stopped any second scancel.
TEST(HangRestart, ACancelSlurmDidNotKeepIsIssuedAgain) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TrainingRun run(c);
  std::string array = run.submit("1-2%1");
  nlohmann::json j;
  ASSERT_TRUE(run.stepped_to(2, j)) << j.dump();
  const std::string task = j["task"];
  long long start = 0;
  for (const auto& e : c.jobs())
    if (std::to_string(e.value("array_job_id", 0LL)) == array && e.value("array_task_id", -1) == 1)
      start = e["start_time"].is_object() ? e["start_time"].value("number", 0LL)
                                          : e["start_time"].get<long long>();
  ASSERT_GT(start, 0) << c.jobs().dump();
  const double lost_at = static_cast<double>(std::time(nullptr)) - 60;
  llmwatch_sql(c.dir / "state",
               "INSERT INTO actions(idem_key, kind, subject, reason, state, detail, started, "
               "finished) VALUES('cancel:" +
                   task + "@" + std::to_string(start) +
                   "', 'cancel', 'itest-train', 'a scancel slurmctld did not keep', 'done', "
                   "'scancel " +
                   task + "', " + std::to_string(lost_at) + ", " + std::to_string(lost_at) + ")");
  run.cycle_and_status();
  std::string events = run.events();
  EXPECT_NE(events.find("job:itest-train/cancel-not-held"), std::string::npos) << events;
  EXPECT_NE(events.find("cancel done: scancel " + task), std::string::npos) << events;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& e : c.jobs())
          if (std::to_string(e.value("array_job_id", 0LL)) == array &&
              e.value("array_task_id", -1) == 1 && e.value("job_state", "") == "RUNNING")
            return false;
        return true;
      },
      60))
      << c.jobs().dump();
}

// A checkpoint save longer than the step allowance (6 s) but within checkpoint_grace is not
// a hang: the "Saving checkpoint" line opens a grace period that the save line closes.
TEST(HangRestart, SlowCheckpointSaveWithinGraceIsNotAHang) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TrainingRun run(c, "checkpoint_grace = \"40s\"\n");
  run.submit("1-2%1", ",FAKE_CKPT_EVERY=4,FAKE_SAVE_SECONDS=10");
  nlohmann::json j;
  // Step 4 starts a 10 s save; keep cycling until the run is well past it.
  ASSERT_TRUE(run.stepped_to(6, j)) << j.dump();
  EXPECT_EQ(run.events().find("hung"), std::string::npos)
      << run.events() << llmwatch_sql(c.dir / "state", "select evidence from findings");
  EXPECT_NE(read_file(j["log"].get<std::string>()).find("Save duration"), std::string::npos);
}

TEST(HangRestart, DryRunRecordsButNeverCancels) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TrainingRun run(c, "", "dry_run = true\n");
  run.submit("1-2%1");
  nlohmann::json j;
  ASSERT_TRUE(run.stepped_to(2, j)) << j.dump();
  std::string task = j["task"];
  write_file(run.work + "/hang", task.substr(task.find('_') + 1));
  ASSERT_TRUE(run.cycled_until("dry-run: would cancel " + task, 60)) << run.events();
  // The hung task is still running: nothing was done.
  bool still_running = false;
  j = run.job();
  for (const auto& e : j["entries"]) still_running |= e["id"] == task && e["state"] == "RUNNING";
  EXPECT_TRUE(still_running) << j.dump() << run.events();
}

TEST(HangRestart, SlurmctldDownMeansUnknownNeverActionAndRecovers) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TrainingRun run(c, "", "");
  write_file(run.config, read_file(run.config) + "\n");
  // Two failed cycles before the unreachable finding becomes an alert.
  std::string text = read_file(run.config);
  text.replace(text.find("[slurm]\n"), 8, "[slurm]\nunreachable_alert_after = 2\n");
  write_file(run.config, text);
  run.submit("1-2%1");
  nlohmann::json j;
  ASSERT_TRUE(run.stepped_to(2, j)) << j.dump();

  // Stop slurmctld and make the run hang: llmwatch cannot see Slurm, so it must not act.
  int ctld = c.pid_of("slurmctld");
  ASSERT_GT(ctld, 0);
  ASSERT_EQ(kill(ctld, SIGTERM), 0);
  ASSERT_TRUE(eventually([&] { return kill(ctld, 0) != 0; }, 30));
  std::string task = j["task"];
  write_file(run.work + "/hang", task.substr(task.find('_') + 1));
  auto before = std::chrono::steady_clock::now();
  int cycles = 0;
  // Cycle well past the hang threshold (6 s floor) while Slurm is down.
  while (std::chrono::steady_clock::now() - before < std::chrono::seconds(12) || cycles < 3) {
    auto s = run.cycle_and_status();
    ++cycles;
  }
  auto s = run.cycle_and_status();
  bool unreachable_warning = false;
  for (const auto& f : s["findings"])
    if (f["key"] == "slurm/unreachable") unreachable_warning = f["severity"] == "warning";
  EXPECT_TRUE(unreachable_warning) << s.dump(2);
  std::string events = run.events();
  EXPECT_EQ(events.find("cancel"), std::string::npos) << events;
  EXPECT_EQ(events.find("restart"), std::string::npos) << events;
  EXPECT_NE(events.find("alert done"), std::string::npos)
      << "the unreachable alert was not raised: " << events;

  // slurmctld comes back (keeping its state): normal service, the finding resolves.
  ProcessSpec start;
  start.argv = {"/usr/sbin/slurmctld", "-f", c.cluster_dir + "/slurm.conf"};
  start.env["LLMWATCH_CLUSTER_DIR"] = c.cluster_dir;
  start.timeout = std::chrono::seconds(30);
  ASSERT_TRUE(run_process(start).ok());
  ASSERT_TRUE(eventually([&] { return c.slurm({"squeue", "--json"}).ok(); }, 60));
  run.cycle_and_status();  // resolve_after_cycles = 2: gone for two cycles in a row
  s = run.cycle_and_status();
  for (const auto& f : s["findings"]) EXPECT_NE(f["key"], "slurm/unreachable") << s.dump(2);
  EXPECT_NE(run.events().find("slurm/unreachable resolved"), std::string::npos);
}

}  // namespace
}  // namespace llmwatch::testing
