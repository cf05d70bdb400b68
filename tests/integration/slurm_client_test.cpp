// The Slurm client against a real cluster: the text fallback follows a job as well as JSON
// does, and a cycle costs the controller one squeue and one sinfo whatever the job count.
#include <algorithm>
#include <fstream>

#include "cycle/supervisor.h"
#include "local_cluster.h"
#include "store/store.h"

namespace llmwatch::testing {
namespace {

TEST(SlurmClient, TextFormatFollowsAJobWithItsLogFromScontrol) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string work = c.dir / "work";
  std::filesystem::create_directories(work);
  std::string config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                         "\"\n[slurm]\nformat = \"text\"\n" + "[[job]]\n" + job_owner() +
                         "name = \"itest-train\"\n");
  auto sub = c.slurm({"sbatch", "--job-name=itest-train", "--array=1-3%1", "--chdir=" + work,
                      "--output=" + work + "/train-%A_%a.out", "--export=ALL,FAKE_STEP_TIME=0.3",
                      source_dir() + "/examples/fake-trainer.sh"});
  ASSERT_TRUE(sub.ok()) << sub.err;
  nlohmann::json job;
  ASSERT_TRUE(eventually(
      [&] {
        llmwatch(config, {"run", "--once"});
        auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
        if (!s.is_object()) return false;
        job = s["jobs"][0];
        return job.value("step", 0) >= 2;
      },
      60))
      << job.dump();
  EXPECT_EQ(job["log"].get<std::string>().rfind(work + "/train-", 0), 0u) << job.dump();
  ASSERT_EQ(job["entries"].size(), 2u) << job.dump();
  bool throttled = false;
  for (const auto& e : job["entries"]) throttled |= e["reason"] == "JobArrayTaskLimit";
  EXPECT_TRUE(throttled) << job.dump();
}

TEST(SlurmClient, OneSqueueAndOneSinfoPerCycleWhateverTheNumberOfJobs) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  auto calls_for = [&](int jobs) {
    std::string text =
        "[llmwatch]\nstate_dir = \"" + (c.dir / ("state-" + std::to_string(jobs))) + "\"\n";
    for (int i = 0; i < jobs; ++i)
      text += "[[job]]\n" + job_owner() + "name = \"run-" + std::to_string(i) + "\"\n";
    auto loaded = load_config_string(text, "budget.toml");
    EXPECT_TRUE(loaded.config);
    Store store(loaded.config->state_dir);
    SlurmClient slurm(loaded.config->slurm);
    Supervisor supervisor(*loaded.config, store, slurm);
    auto r = supervisor.run_cycle(unix_now());
    EXPECT_EQ(r.unknown_probes, 0);
    return slurm.calls();
  };
  EXPECT_EQ(calls_for(1), 2);
  EXPECT_EQ(calls_for(1000), 2);
}

// Several tasks start at once (as after a maintenance window): a text-mode cycle asks slurmctld
// what it lacks of all of them in one call, not one `scontrol show job` each (#25). The Slurm
// commands are wrapped on bin_dir, so every call a real cycle makes is counted.
TEST(SlurmClient, NewTasksCostOneCallTogetherInTextMode) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string work = c.dir / "work", wrap = c.dir / "wrapped", calls = c.dir / "calls.log";
  std::filesystem::create_directories(work);
  std::filesystem::create_directories(wrap);
  for (const char* tool : {"squeue", "sinfo", "scontrol", "sacct", "sbatch", "scancel", "srun"}) {
    std::string real = c.slurm({"sh", "-c", std::string("command -v ") + tool}).out;
    real = real.substr(0, real.find('\n'));
    write_file(wrap + "/" + tool, "#!/bin/sh\necho \"" + std::string(tool) + " $*\" >>" + calls +
                                      "\nexec " + real + " \"$@\"\n");
    std::filesystem::permissions(wrap + "/" + tool, std::filesystem::perms::all);
  }
  std::string config = c.dir / "llmwatch.toml";
  std::string text = "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                     "\"\n[slurm]\nformat = " + "\"text\"\nbin_dir = \"" + wrap + "\"\n";
  for (int i = 0; i < 3; ++i) {
    std::string name = "itest-new-" + std::to_string(i);
    text += "[[job]]\n" + job_owner() + "name = \"" + name + "\"\n";
    auto sub = c.slurm({"sbatch", "--job-name=" + name, "--chdir=" + work,
                        "--output=" + work + "/" + name + "-%j.out",
                        "--export=ALL,FAKE_STEP_TIME=0.3,FAKE_TRAINER_DIR=" + work + "/" + name,
                        source_dir() + "/examples/fake-trainer.sh"});
    ASSERT_TRUE(sub.ok()) << sub.err;
  }
  write_file(config, text);
  ASSERT_TRUE(eventually(
      [&] {
        auto q = c.slurm({"squeue", "-h", "-t", "R", "-o", "%j"}).out;
        return std::count(q.begin(), q.end(), '\n') == 3;
      },
      60));
  std::filesystem::remove(calls);
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  std::ifstream in(calls);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_LE(lines.size(), 3u) << all;
  EXPECT_EQ(all.find("scontrol show job"), std::string::npos) << all;
  // And what it asked is what it needed: each run's log is followed.
  auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
  ASSERT_TRUE(s.is_object());
  for (const auto& job : s["jobs"])
    EXPECT_EQ(job.value("log", "").rfind(work + "/itest-new-", 0), 0u) << job.dump();
  // A restart made on a wake's replayed answer asks Slurm for its run's tasks alone
  // (plugins/job/restart.cpp): one squeue, listing that name's task and no other.
  auto loaded = load_config_string(text, "named.toml");
  ASSERT_TRUE(loaded.config);
  SlurmClient slurm(loaded.config->slurm);
  auto named = slurm.tasks_named("itest-new-1", "");
  ASSERT_TRUE(named.ok()) << named.error;
  ASSERT_EQ(named.jobs.size(), 1u);
  EXPECT_EQ(named.jobs[0].name, "itest-new-1");
  EXPECT_TRUE(named.jobs[0].running()) << named.jobs[0].state;
  auto mine = slurm.tasks_named("itest-new-1", named.jobs[0].user);
  EXPECT_EQ(mine.jobs.size(), 1u) << mine.error;
  EXPECT_TRUE(slurm.tasks_named("itest-new-9", "").jobs.empty());
  EXPECT_EQ(slurm.calls(), 3);
}

}  // namespace
}  // namespace llmwatch::testing

namespace llmwatch::testing {
namespace {

TEST(Views, DrainedNodeShowsInNodesAndStatusWithoutColourWhenPiped) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") + "\"\n");
  ASSERT_TRUE(
      c.slurm({"scontrol", "update", "nodename=node-2", "state=drain", "reason=bad HBM"}).ok());
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  auto nodes = llmwatch(config, {"nodes"});
  EXPECT_NE(nodes.out.find("nodes needing attention: 1 of 4"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("node-2  idle+DRAIN  bad HBM"), std::string::npos) << nodes.out;
  auto status = llmwatch(config, {"status"});
  EXPECT_NE(status.out.find("Nodes needing attention"), std::string::npos) << status.out;
  EXPECT_EQ(status.out.find('\033'), std::string::npos) << "colour codes in piped output";
  auto j = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out);
  EXPECT_EQ(j["schema"], "llmwatch.status/1");
  EXPECT_EQ(j["nodes"][0]["name"], "node-2");
}

}  // namespace
}  // namespace llmwatch::testing
