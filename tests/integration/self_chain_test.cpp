// The self-perpetuating llmwatch job on a real cluster: submit is idempotent, the job queues
// exactly one successor and records a cycle, and a chain whose successor was killed is
// noticed and mended by the next cycle.
#include <set>

#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

std::vector<nlohmann::json> llmwatch_jobs(const LocalCluster& c, const std::string& state) {
  std::vector<nlohmann::json> out;
  for (const auto& j : c.jobs())
    if (j["name"] == "llmwatch" && (state.empty() || j["job_state"] == state)) out.push_back(j);
  return out;
}

TEST(SelfChain, SubmitTwiceRunsOneChainThatQueuesItsSuccessorAndHealsWhenKilled) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  write_file(
      config,
      "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
          "\"\n[slurm]\ntimeout = \"10s\"\n[self]\ninterval = \"1h\"\ntime_limit = \"00:05:00\"\n");

  auto first = llmwatch(config, {"submit"});
  ASSERT_TRUE(first.ok()) << first.describe("submit") << first.out << first.err;
  auto second = llmwatch(config, {"submit"});
  ASSERT_TRUE(second.ok()) << second.describe("submit") << second.err;
  EXPECT_NE(second.out.find("already active"), std::string::npos) << second.out;
  ASSERT_EQ(llmwatch_jobs(c, "").size(), 1u);
  auto first_id = llmwatch_jobs(c, "")[0]["job_id"].get<long long>();

  // The first job runs, queues exactly one successor (begin in 1h) and records its cycle.
  std::vector<nlohmann::json> pending;
  ASSERT_TRUE(eventually(
      [&] {
        pending = llmwatch_jobs(c, "PENDING");
        return llmwatch_jobs(c, "RUNNING").empty() && pending.size() == 1 &&
               pending[0]["job_id"] != first_id;
      },
      90))
      << "no single successor; queue: " << c.jobs().dump().substr(0, 2000);
  // Waiting for its begin time (or, while the first run completes, for the singleton).
  EXPECT_TRUE(pending[0]["state_reason"] == "BeginTime" ||
              pending[0]["state_reason"] == "Dependency")
      << pending[0]["state_reason"];
  auto successor = pending[0]["job_id"].get<long long>();

  auto status = llmwatch(config, {"status", "--json"});
  ASSERT_TRUE(status.ok()) << status.err;
  auto s = nlohmann::json::parse(status.out);
  EXPECT_TRUE(s["llmwatch"].contains("last_cycle"))
      << "the self job recorded no cycle: " << status.out;
  EXPECT_EQ(s["llmwatch"]["successor_job"], std::to_string(successor));
  EXPECT_EQ(s["llmwatch"]["chain"], "on");

  // Kill the successor: the chain is broken. A cycle run by hand notices and re-queues it.
  ASSERT_TRUE(c.slurm({"scancel", std::to_string(successor)}).ok());
  ASSERT_TRUE(eventually([&] { return llmwatch_jobs(c, "PENDING").empty(); }));
  auto run = llmwatch(config, {"run", "--once"});
  ASSERT_TRUE(run.ok()) << run.describe("run --once") << run.err;
  auto requeued = llmwatch_jobs(c, "PENDING");
  ASSERT_EQ(requeued.size(), 1u);
  EXPECT_NE(requeued[0]["job_id"], successor);
  auto events = llmwatch(config, {"events", "--json"});
  EXPECT_NE(events.out.find("re-queued"), std::string::npos) << events.out;
  // And the broken chain was a finding (an alert), not a silent repair.
  EXPECT_NE(events.out.find("llmwatch/successor"), std::string::npos) << events.out;

  // Another cycle: the chain is whole again, nothing more is queued.
  ASSERT_TRUE(llmwatch(config, {"run", "--once"}).ok());
  EXPECT_EQ(llmwatch_jobs(c, "PENDING").size(), 1u);
}

// [self] span (#30): each run of the self job supervises as the daemon does (a cycle every
// [llmwatch] interval, here 1 s) for its span, then hands over to the successor it queued first,
// which the singleton dependency holds until then. Before, a run was one cycle: a hang or a crash
// waited for the next run, [self] interval (10 min by default) later.
TEST(SelfChain, ARunWithASpanSupervisesForItsSpanThenItsSuccessorTakesOver) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                         "\"\ninterval = \"1s\"\n[slurm]\ntimeout = \"10s\"\n[self]\n"
                         "interval = \"2s\"\nspan = \"12s\"\ntime_limit = \"00:05:00\"\n");
  auto submitted = llmwatch(config, {"submit"});
  ASSERT_TRUE(submitted.ok()) << submitted.describe("submit") << submitted.err;
  std::vector<nlohmann::json> running;
  ASSERT_TRUE(eventually([&] { return (running = llmwatch_jobs(c, "RUNNING")).size() == 1; }, 60))
      << c.jobs().dump().substr(0, 2000);
  const auto first = running[0]["job_id"].get<long long>();
  // While that one run lasts, cycles follow each other every second.
  std::set<std::string> cycles;
  auto last_cycle = [&] {
    auto s = nlohmann::json::parse(llmwatch(config, {"status", "--json"}).out, nullptr, false);
    return s.is_object() && s["llmwatch"].contains("last_cycle")
               ? s["llmwatch"]["last_cycle"].dump()
               : std::string();
  };
  EXPECT_TRUE(eventually(
      [&] {
        auto r = llmwatch_jobs(c, "RUNNING");
        if (r.size() != 1 || r[0]["job_id"] != first) return false;
        if (auto at = last_cycle(); !at.empty()) cycles.insert(at);
        return cycles.size() >= 3;
      },
      30))
      << "cycles seen in job " << first << ": " << cycles.size();
  // It ends after its span, and the successor (queued first, held by the singleton) runs.
  ASSERT_TRUE(eventually(
      [&] {
        auto r = llmwatch_jobs(c, "RUNNING");
        return r.size() == 1 && r[0]["job_id"] != first;
      },
      60))
      << c.jobs().dump().substr(0, 2000);
  EXPECT_TRUE(eventually([&] { return llmwatch_jobs(c, "PENDING").size() == 1; }, 30))
      << "the chain goes on: " << c.jobs().dump().substr(0, 2000);
}

}  // namespace
}  // namespace llmwatch::testing
