// Kill and save switches with the fake trainer: `llmwatch kill` stops an array run
// gracefully and its queued tasks burn through; `llmwatch save` produces a checkpoint and
// the training loop removes the switch, which llmwatch notices.
#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

struct SwitchRun {
  LocalCluster& c;
  std::string work, config;
  explicit SwitchRun(LocalCluster& cluster)
      : c(cluster), work(cluster.dir / "work"), config(cluster.dir / "llmwatch.toml") {
    std::filesystem::create_directories(work);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\n[slurm]\ntimeout = \"10s\"\n" + "[[job]]\n" + job_owner() +
                           "name = \"itest-train\"\nstale_floor = \"1m\"\nkill_switch = \"" + work +
                           "/kill-switch\"\nsave_switch = \"" + work +
                           "/save-switch\"\nkill_grace = \"1s\"\n" + "checkpoint_grace = \"1m\"\n");
  }
  void submit(const std::string& array) {
    auto r = c.slurm(
        {"sbatch", "--job-name=itest-train", "--array=" + array, "--chdir=" + work,
         "--output=" + work + "/train-%A_%a.out",
         "--export=ALL,FAKE_TRAINER_DIR=" + work + ",FAKE_STEP_TIME=0.3,FAKE_CKPT_EVERY=1000",
         source_dir() + "/examples/fake-trainer.sh"});
    ASSERT_TRUE(r.ok()) << r.err;
  }
  int step() {
    llmwatch(config, {"run", "--once"});
    auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
    return s.is_object() ? s["jobs"][0].value("step", 0) : 0;
  }
  bool queue_empty() {
    for (const auto& j : c.jobs())
      if (j["name"] == "itest-train" &&
          (j["job_state"] == "RUNNING" || j["job_state"] == "PENDING"))
        return false;
    return true;
  }
};

TEST(Switches, KillStopsTheArrayGracefullyAndQueuedTasksBurnThrough) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  SwitchRun run(c);
  run.submit("1-3%1");
  ASSERT_TRUE(eventually([&] { return run.step() >= 2; }, 60));
  auto kill = llmwatch(run.config, {"kill", "itest-train"});
  ASSERT_TRUE(kill.ok()) << kill.out << kill.err;
  EXPECT_NE(kill.out.find("kill itest-train: done"), std::string::npos) << kill.out;
  ASSERT_TRUE(eventually([&] { return run.queue_empty(); }, 60)) << c.jobs().dump().substr(0, 2000);
  // Task 1 saved and exited cleanly; tasks 2 and 3 exited at start without training.
  std::string jobid;
  for (const auto& entry : std::filesystem::directory_iterator(run.work)) {
    std::string name = entry.path().filename();
    if (name.rfind("train-", 0) == 0 && name.find("_1.out") != std::string::npos)
      jobid = name.substr(6, name.find('_') - 6);
  }
  ASSERT_FALSE(jobid.empty());
  EXPECT_NE(
      read_file(run.work + "/train-" + jobid + "_1.out").find("kill switch seen: exiting cleanly"),
      std::string::npos);
  for (const char* task : {"_2.out", "_3.out"})
    EXPECT_NE(
        read_file(run.work + "/train-" + jobid + task).find("present: exiting without training"),
        std::string::npos);
  EXPECT_FALSE(read_file(run.work + "/checkpoint").empty());
  // Releasing removes the switch so the next run can train.
  auto release = llmwatch(run.config, {"release", "itest-train"});
  EXPECT_TRUE(release.ok()) << release.out << release.err;
  EXPECT_FALSE(std::filesystem::exists(run.work + "/kill-switch"));
}

TEST(Switches, KillSwitchLeftBehindWhileTasksQueueIsAnAlert) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  SwitchRun run(c);
  write_file(run.work + "/kill-switch", "");
  // Hold the array so tasks stay queued behind the forgotten switch.
  run.submit("1-20%1");
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        return llmwatch(run.config, {"events"}).out.find("job:itest-train/kill-switch-left") !=
               std::string::npos;
      },
      60))
      << llmwatch(run.config, {"events"}).out;
}

TEST(Switches, SaveProducesACheckpointAndTheSwitchIsRemoved) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  SwitchRun run(c);
  run.submit("1-2%1");
  ASSERT_TRUE(eventually([&] { return run.step() >= 2; }, 60));
  EXPECT_FALSE(std::filesystem::exists(run.work + "/checkpoint"));  // FAKE_CKPT_EVERY=1000
  auto save = llmwatch(run.config, {"save", "itest-train"});
  ASSERT_TRUE(save.ok()) << save.out << save.err;
  ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(run.work + "/save-switch"); }, 30));
  EXPECT_GE(std::atoi(read_file(run.work + "/checkpoint").c_str()), 2);
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        return llmwatch(run.config, {"events"}).out.find("checkpoint taken") != std::string::npos;
      },
      30))
      << llmwatch(run.config, {"events"}).out;
}

}  // namespace
}  // namespace llmwatch::testing
