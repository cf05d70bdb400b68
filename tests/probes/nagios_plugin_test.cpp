#include "probes/nagios_plugin.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "test_util.h"

namespace llmwatch {
namespace {

// A gcm/NHC-style plugin: fails on node-2 only (it is told its node), counts its runs.
struct Plugin {
  testing::TempDir dir;
  std::string script = dir / "check_gpu_mem";
  std::string runs = dir / "runs";
  Plugin() {
    testing::write_file(script, "#!/bin/sh\necho run >> '" + runs +
                                    "'\nif [ \"$LLMWATCH_NODE\" = node-2 ]; then\n"
                                    "  echo 'CRITICAL - ECC page retirement pending | pages=3'\n"
                                    "  echo 'GPU 5: 3 pages pending'\n  exit 2\nfi\n"
                                    "echo 'OK - all good'\n");
    ::chmod(script.c_str(), 0755);
  }
  CommandCheckSettings check(const std::string& where = "nodes") {
    CommandCheckSettings k;
    k.name = "gpu-mem";
    k.command = {script};
    k.every = Seconds(3600);
    k.timeout = Seconds(5);
    k.where = where;
    return k;
  }
  size_t count() { return testing::read_file(runs).size() / 4; }
};

TEST(NagiosPlugin, ANodesCheckRunsWithItsNodeAndKeepsItsAnswerForEvery) {
  Plugin p;
  std::string cache = p.dir / "node-2.check.";
  auto runs = run_node_plugins({p.check(), p.check("here")}, "node-2", cache, 1000, 0);
  ASSERT_EQ(runs.size(), 1u);  // a where = "here" check is the supervisor's
  EXPECT_EQ(runs[0].answer.code, 2);
  EXPECT_EQ(runs[0].answer.summary, "CRITICAL - ECC page retirement pending");
  EXPECT_EQ(runs[0].answer.detail, std::vector<std::string>{"GPU 5: 3 pages pending"});
  EXPECT_EQ(runs[0].hint, "drain");
  EXPECT_FALSE(runs[0].cached);
  // Within `every` the node keeps its answer and does not run the plugin again ...
  auto again = run_node_plugins({p.check()}, "node-2", cache, 1000 + 1800, 0);
  EXPECT_TRUE(again[0].cached);
  EXPECT_EQ(again[0].answer.code, 2);
  EXPECT_EQ(p.count(), 1u);
  // The perfdata figure is read, and kept with the answer.
  EXPECT_EQ(runs[0].answer.figures, (std::map<std::string, double>{{"pages", 3}}));
  EXPECT_EQ(again[0].answer.figures, runs[0].answer.figures);
  // ... and runs it once `every` has passed, or when the clock went back.
  EXPECT_FALSE(run_node_plugins({p.check()}, "node-2", cache, 1000 + 3600, 0)[0].cached);
  EXPECT_FALSE(run_node_plugins({p.check()}, "node-2", cache, 10, 0)[0].cached);
  EXPECT_EQ(p.count(), 3u);
  // Another node passes.
  EXPECT_EQ(
      run_node_plugins({p.check()}, "node-1", p.dir / "node-1.check.", 1000, 0)[0].answer.code, 0);
}

// A node rebooted after its CRITICAL answer was kept: the answer is of the node before the
// boot and the check runs again (#26.6).
TEST(NagiosPlugin, AnAnswerFromBeforeTheBootIsNeverUsed) {
  Plugin p;
  std::string cache = p.dir / "node-2.check.";
  auto first = run_node_plugins({p.check()}, "node-2", cache, 1000, 500);
  EXPECT_FALSE(first[0].cached);
  EXPECT_TRUE(run_node_plugins({p.check()}, "node-2", cache, 1100, 500)[0].cached);
  // Booted at 1050, after the answer: asked again.
  auto after_boot = run_node_plugins({p.check()}, "node-2", cache, 1100, 1050);
  EXPECT_FALSE(after_boot[0].cached);
  EXPECT_EQ(after_boot[0].answer.ts, 1100);
  EXPECT_EQ(p.count(), 2u);
  EXPECT_GT(host_boot_time(), 0);
}

TEST(NagiosPlugin, ATimeoutOrAMissingProgramIsUnknown) {
  Plugin p;
  CommandCheckSettings hang = p.check();
  hang.command = {"sleep", "30"};
  hang.timeout = Seconds(1);
  EXPECT_EQ(run_plugin(hang).code, 3);
  CommandCheckSettings missing = p.check();
  missing.command = {p.dir / "no-such-check"};
  auto a = run_plugin(missing);
  EXPECT_EQ(a.code, 3);
  EXPECT_NE(a.summary.find("could not run"), std::string::npos) << a.summary;
}

}  // namespace
}  // namespace llmwatch
