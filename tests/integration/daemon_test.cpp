// `llmwatch daemon`: cycles on its timer, reloads its config on SIGHUP (refusing a broken
// one), stops cleanly on SIGTERM and gives its lease back; a second instance stands by.
#include "local_cluster.h"

namespace llmwatch::testing {
namespace {

int cycles(const std::string& state_dir) {
  auto r = llmwatch_sql(state_dir, "SELECT COUNT(*) FROM cycles");
  return std::atoi(r.c_str());
}

TEST(Daemon, CyclesReloadsOnSighupAndStopsCleanlyOnSigterm) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  std::string state = c.dir / "state";
  std::string metrics = c.dir / "llmwatch.prom";
  std::string base = "[llmwatch]\nstate_dir = \"" + state +
                     "\"\ninterval = \"1s\"\nmetrics_file = \"" + metrics + "\"\n";
  write_file(config, base);
  BackgroundProcess d({llmwatch_bin(), "--config", config, "daemon"}, c.dir / "daemon.log");
  ASSERT_TRUE(eventually([&] { return cycles(state) >= 2; }, 30)) << read_file(d.log);
  ASSERT_TRUE(std::filesystem::exists(state + "/lease"));

  // A second instance finds the lease held: it says by whom and exits 0 without acting.
  int before = cycles(state);
  auto second = llmwatch(config, {"run", "--once"});
  EXPECT_TRUE(second.ok());
  EXPECT_NE(second.err.find("holds the lease"), std::string::npos) << second.err;

  // The metrics file is valid Prometheus text format.
  if (access("/usr/bin/promtool", X_OK) == 0) {
    ProcessSpec check;
    check.argv = {"/usr/bin/promtool", "check", "metrics"};
    check.stdin_data = read_file(metrics);
    auto r = run_process(check);
    EXPECT_TRUE(r.ok()) << r.out << r.err << check.stdin_data;
  }

  // A broken config on SIGHUP is refused and the daemon keeps its old one.
  write_file(config, base + "bogus_key = 1\n");
  kill(d.pid, SIGHUP);
  ASSERT_TRUE(
      eventually([&] { return read_file(d.log).find("reload refused") != std::string::npos; }, 10))
      << read_file(d.log);
  write_file(config, base + "dry_run = true\n");
  kill(d.pid, SIGHUP);
  ASSERT_TRUE(
      eventually([&] { return read_file(d.log).find("reloaded") != std::string::npos; }, 10))
      << read_file(d.log);
  ASSERT_TRUE(eventually([&] { return cycles(state) > before + 1; }, 10));

  kill(d.pid, SIGTERM);
  EXPECT_EQ(d.wait_exit(20), 0) << read_file(d.log);
  EXPECT_FALSE(std::filesystem::exists(state + "/lease")) << "the lease was not given back";
}

}  // namespace
}  // namespace llmwatch::testing
