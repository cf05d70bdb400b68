// Every way a run ends, on the real local cluster: the trainer dies the way real runs die
// (examples/fake-trainer.sh's crash file), llmwatch classifies the end from Slurm's final
// state and the log's last lines, names the node, and restarts the run off that node only.
#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

struct EndingRun {
  LocalCluster& c;
  std::string work, config;
  explicit EndingRun(LocalCluster& cluster)
      : c(cluster), work(c.dir / "work"), config(c.dir / "llmwatch.toml") {
    std::filesystem::create_directories(work);
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\n[slurm]\ntimeout = \"10s\"\n[[job]]\n" + job_owner() +
                           "name = \"itest-pm\"\nstartup_grace = \"1m\"\nstale_floor = \"1m\"\n");
  }
  std::string submit(int nodes) {
    auto r =
        c.slurm({"sbatch", "--parsable", "--job-name=itest-pm", "--nodes=" + std::to_string(nodes),
                 "--chdir=" + work, "--output=" + work + "/train-%j.out",
                 "--export=ALL,FAKE_STEP_TIME=0.3,FAKE_TRAINER_DIR=" + work,
                 source_dir() + "/examples/fake-trainer.sh"});
    EXPECT_TRUE(r.ok()) << r.err;
    return r.out.substr(0, r.out.find_first_of(";\n"));
  }
  bool stepping() {
    llmwatch(config, {"run", "--once"});
    auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
    return s.is_object() && s["jobs"][0].value("step", 0) >= 2;
  }
  // The ids of this run's jobs that are still in play.
  std::vector<std::string> live() {
    std::vector<std::string> out;
    for (const auto& j : c.jobs()) {
      std::string state = j["job_state"].is_string() ? j["job_state"].get<std::string>() : "";
      if (j["name"] == "itest-pm" &&
          (state == "RUNNING" || state == "PENDING" || state == "CONFIGURING"))
        out.push_back(std::to_string(j["job_id"].get<long long>()));
    }
    return out;
  }
  bool ended(const std::string& first) {
    return live().empty() || (live().size() == 1 && live()[0] != first);
  }
};

// The crash: node-2's rank printed an NCCL WARN and a DistBackendError, the task
// failed. Before: "absent: nothing RUNNING or PENDING", no cause, no node, no restart.
TEST(PostMortem, AnNcclCrashIsExplainedAndTheRunRestartsOffTheNodeItNames) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  EndingRun run(c);
  std::string first = run.submit(3);
  ASSERT_TRUE(eventually([&] { return run.stepping(); }, 60));
  auto crashed = std::chrono::steady_clock::now();
  write_file(run.work + "/crash", "nccl node-2\n");
  ASSERT_TRUE(eventually([&] { return run.ended(first); }, 30));
  std::string second;
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(run.config, {"run", "--once"});
        auto now = run.live();
        if (now.size() == 1 && now[0] != first) second = now[0];
        return !second.empty();
      },
      30))
      << llmwatch(run.config, {"events"}).out;
  auto show = c.slurm({"scontrol", "show", "job", second});
  EXPECT_NE(show.out.find("ExcNodeList=node-2\n"), std::string::npos) << show.out;
  std::string events = llmwatch(run.config, {"events"}).out;
  EXPECT_NE(events.find("task " + first + " ended: NCCL or network error"), std::string::npos)
      << events;
  EXPECT_NE(events.find("suspect node-2 (0.40)"), std::string::npos) << events;
  // Crash to the new run RUNNING off node-2, for the README (a figure, not an assertion).
  ASSERT_TRUE(eventually(
      [&] {
        return c.slurm({"scontrol", "show", "job", second}).out.find("JobState=RUNNING") !=
               std::string::npos;
      },
      60));
  RecordProperty(
      "crash_to_running_s",
      std::to_string(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - crashed).count()));
  // One restart for that crash, however many cycles follow.
  ASSERT_TRUE(llmwatch(run.config, {"run", "--once"}).ok());
  EXPECT_EQ(run.live().size(), 1u);
}

// A person's scancel is a decision, not a failure: the run stays stopped.
TEST(PostMortem, APersonsCancelIsLeftAlone) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  EndingRun run(c);
  std::string first = run.submit(1);
  ASSERT_TRUE(eventually([&] { return run.stepping(); }, 60));
  ASSERT_TRUE(c.slurm({"scancel", first}).ok());
  ASSERT_TRUE(eventually([&] { return run.live().empty(); }, 30));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(llmwatch(run.config, {"run", "--once"}).ok());
  EXPECT_TRUE(run.live().empty());
  std::string events = llmwatch(run.config, {"events"}).out;
  EXPECT_NE(events.find("ended: cancelled (by a person)"), std::string::npos) << events;
}

}  // namespace
}  // namespace llmwatch::testing
