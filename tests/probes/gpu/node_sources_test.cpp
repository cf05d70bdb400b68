// node-check's sources against stand-in nvidia-smi / dcgmi executables that print real
// captures, fail, or hang.
#include "probes/gpu/node_sources.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "rules/node_health.h"
#include "test_util.h"

using namespace llmwatch;

namespace {

struct StandIns {
  llmwatch::testing::TempDir dir;
  GpuSettings s;
  StandIns() {
    s.nvidia_smi = std::string(LLMWATCH_TEST_HELPERS) + "/fake-nvidia-smi";
    s.dcgmi = std::string(LLMWATCH_TEST_HELPERS) + "/fake-dcgmi";
    s.kernel_log = "file";
    s.kernel_log_path = dir / "{node}.log";
    s.nvidia_smi_timeout = Seconds(1);
    s.dcgmi_timeout = Seconds(1);
    setenv("FAKE_NVSMI_MODE", "ok", 1);
    setenv("FAKE_DCGMI_MODE", "ok", 1);
    setenv("FAKE_NVSMI_QUERY", llmwatch::testing::fixture("gpu/nvidia-smi-query-h100.csv").c_str(),
           1);
    setenv("FAKE_NVSMI_NVLINK", llmwatch::testing::fixture("gpu/nvlink-status-h100.txt").c_str(),
           1);
    setenv("FAKE_NVSMI_APPS", "/dev/null", 1);
    llmwatch::testing::write_file(dir / "node-1.log", "[1.0] kernel: eth0 link up\n");
  }
  NodeReport check() {
    auto in = gather_node_inputs(s, "node-1");
    return evaluate_node("node-1", 1, in, s, *load_xid_table("").table);
  }
};

}  // namespace

TEST(NodeSources, HealthyCaptures) {
  StandIns t;
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Ok) << r.headline();
  EXPECT_EQ(r.gpu_processes, 0);
  EXPECT_EQ(r.sources, (std::vector<std::string>{"kernel-log", "nvidia-smi", "nvlink"}));
}

// The defect: `logger "NVRM: Xid ... 79 ..."` (any user, any process) made node-check report
// CRITICAL, and --drain-self drained the node. Only the kernel reports Xids.
TEST(NodeSources, AnXidLineThatIsNotFromTheKernelIsIgnored) {
  StandIns t;
  llmwatch::testing::write_file(
      t.dir / "node-1.log",
      "Aug 17 06:18:01 node-1 mallory: NVRM: Xid (PCI:0000:00:09): 79, pid=1, GPU has fallen "
      "off the bus.\n"
      "2024-08-17T06:18:02.000+00:00 node-1 logger[77]: NVRM: Xid (PCI:0000:00:09): 79, x\n"
      "14,99,5,-;NVRM: Xid (PCI:0000:00:09): 79, pid=1, name=x, written to /dev/kmsg by a user\n"
      "NVRM: Xid (PCI:0000:00:09): 79, pid=1, name=python, no prefix at all\n",
      true);
  EXPECT_EQ(t.check().verdict, Verdict::Ok);
  // The same Xid logged by the kernel (syslog's kernel tag, ISO timestamp) counts.
  llmwatch::testing::write_file(
      t.dir / "node-1.log",
      "2024-08-17T06:18:03.000+00:00 node-1 kernel: NVRM: Xid (PCI:0000:00:09): 79, pid=1, "
      "name=python, GPU has fallen off the bus.\n",
      true);
  EXPECT_EQ(t.check().verdict, Verdict::Critical);
}

TEST(NodeSources, XidInTheKernelLogFile) {
  StandIns t;
  llmwatch::testing::write_file(
      t.dir / "node-1.log",
      "[5.0] NVRM: Xid (PCI:0000:00:09): 79, pid=1, name=python, GPU has fallen "
      "off the bus.\n",
      true);
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_EQ(r.gpus.at(0), Verdict::Critical);  // bus 0000:00:09 is GPU 0 of the capture
}

TEST(NodeSources, NvidiaSmiFailingIsUnknown) {
  StandIns t;
  setenv("FAKE_NVSMI_MODE", "fail", 1);
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Unknown);
  EXPECT_NE(r.headline().find("exit 9"), std::string::npos) << r.headline();
}

TEST(NodeSources, NvidiaSmiHangingIsUnknownWithinItsTimeout) {
  StandIns t;
  setenv("FAKE_NVSMI_MODE", "hang", 1);
  auto t0 = std::chrono::steady_clock::now();
  auto r = t.check();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.verdict, Verdict::Unknown);
  EXPECT_FALSE(r.wants_drain());
  EXPECT_NE(r.headline().find("timed out"), std::string::npos) << r.headline();
  // The three nvidia-smi calls run side by side: about one timeout, not three.
  EXPECT_LT(took, 2.9);
}

TEST(NodeSources, DcgmiExit205WithDocumentAndHanging) {
  StandIns t;
  t.s.dcgmi_diag_level = "2";
  setenv("FAKE_DCGMI_DIAG",
         llmwatch::testing::fixture("gpu/dcgmi-diag-r2-4x-shape-fail.json").c_str(), 1);
  setenv("FAKE_DCGMI_EXIT", "205", 1);
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Critical) << r.headline();
  EXPECT_EQ(r.gpus.at(1), Verdict::Critical);
  setenv("FAKE_DCGMI_MODE", "hang", 1);
  auto hung = t.check();
  EXPECT_EQ(hung.verdict, Verdict::Unknown) << hung.headline();
  unsetenv("FAKE_DCGMI_EXIT");
}

TEST(NodeSources, UnreadableKernelLogIsUnknown) {
  StandIns t;
  t.s.kernel_log_path = t.dir / "missing-{node}.log";
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Unknown);
  EXPECT_NE(r.headline().find("missing-node-1.log"), std::string::npos);
}

// A real H200 with a second process beside the trainer: its compute processes, placed on the
// GPU by bus id, are telemetry (the node-check's own reading of that moment, on that machine,
// said "2 compute processes"). Idle, nvidia-smi prints nothing: 0, not unknown.
TEST(NodeSources, ComputeProcessesPerGpuFromTheRealH200) {
  StandIns t;
  auto capture = [](const char* name) {
    return llmwatch::testing::fixture(std::string("gpu/h200-580.159.04/") + name);
  };
  setenv("FAKE_NVSMI_QUERY", capture("query-contended-run2.csv").c_str(), 1);
  setenv("FAKE_NVSMI_APPS", capture("compute-apps-contended-run2.csv").c_str(), 1);
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Ok) << r.headline();
  EXPECT_EQ(r.gpu_processes, 2);
  ASSERT_EQ(r.telemetry.size(), 1u);
  EXPECT_EQ(r.telemetry[0].processes, 2.0);
  EXPECT_EQ(describe(r.telemetry[0]),
            "GPU 0: SW Power Cap; SM clock 1530/1980 MHz, 689/700 W, 61 °C, 100% busy, 2 compute "
            "processes");
  setenv("FAKE_NVSMI_APPS", capture("compute-apps-idle-run2.csv").c_str(), 1);
  auto idle = t.check();
  EXPECT_EQ(idle.gpu_processes, 0);
  ASSERT_EQ(idle.telemetry.size(), 1u);
  EXPECT_EQ(idle.telemetry[0].processes, 0.0);
  setenv("FAKE_NVSMI_QUERY", llmwatch::testing::fixture("gpu/nvidia-smi-query-h100.csv").c_str(),
         1);
  setenv("FAKE_NVSMI_APPS", "/dev/null", 1);
}

// The same on a real H100 (driver 580.159.04), whose CSV carries the clock-event counters too:
// a second process beside the trainer, then 4 ranks of a job on its one GPU.
TEST(NodeSources, ComputeProcessesPerGpuFromTheRealH100) {
  StandIns t;
  auto capture = [](const std::string& name) {
    return llmwatch::testing::fixture("gpu/h100-580.159.04/" + name);
  };
  for (const auto& [moment, processes, told] :
       {std::tuple{"contended", 2,
                   "GPU 0: SW Power Cap; SM clock 1530/1980 MHz, 691/700 W, 74 °C, 100% busy, 2 "
                   "compute processes"},
        std::tuple{"cpu-starved", 4,
                   "GPU 0: SW Power Cap; SM clock 1755/1980 MHz, 534/700 W, 71 °C, 47% busy, 4 "
                   "compute processes"}}) {
    SCOPED_TRACE(moment);
    setenv("FAKE_NVSMI_QUERY", capture(std::string("query-") + moment + ".csv").c_str(), 1);
    setenv("FAKE_NVSMI_APPS", capture(std::string("compute-apps-") + moment + ".csv").c_str(), 1);
    auto r = t.check();
    EXPECT_EQ(r.verdict, Verdict::Ok) << r.headline();
    EXPECT_EQ(r.gpu_processes, processes);
    ASSERT_EQ(r.telemetry.size(), 1u);
    EXPECT_EQ(describe(r.telemetry[0]), told);
  }
  setenv("FAKE_NVSMI_QUERY", llmwatch::testing::fixture("gpu/nvidia-smi-query-h100.csv").c_str(),
         1);
  setenv("FAKE_NVSMI_APPS", "/dev/null", 1);
}

// The real H200 answers every field llmwatch asks, its clock-event counters too. A driver that
// does not know the counters is asked again without them (the telemetry stays); one that does
// not know the telemetry fields either is asked for the health fields alone.
TEST(NodeSources, OlderDriversAreAskedForFewerFields) {
  StandIns t;
  auto r = t.check();
  ASSERT_EQ(r.telemetry.size(), 1u);
  EXPECT_TRUE(r.telemetry[0].sm_mhz);
  setenv("FAKE_NVSMI_REJECT", "clocks_event_reasons_counters", 1);
  auto older = t.check();
  EXPECT_EQ(older.verdict, Verdict::Ok) << older.headline();
  ASSERT_EQ(older.telemetry.size(), 1u);
  EXPECT_TRUE(older.telemetry[0].sm_mhz) << "the telemetry without the counters";
  setenv("FAKE_NVSMI_REJECT", "clocks.max.sm", 1);
  auto oldest = t.check();
  EXPECT_EQ(oldest.verdict, Verdict::Ok) << oldest.headline();
  EXPECT_EQ(oldest.gpus.size(), 1u);
  setenv("FAKE_NVSMI_REJECT", "index", 1);  // every list has it: nvidia-smi's error is said
  auto none = t.check();
  EXPECT_EQ(none.verdict, Verdict::Unknown) << none.headline();
  unsetenv("FAKE_NVSMI_REJECT");
}

// Where DCGM is present (#28): dmon's figures are the slow node's telemetry when nvidia-smi is
// not run, and fill what nvidia-smi did not give when both are; a dmon that fails is unknown.
TEST(NodeSources, DcgmiDmonGivesTheTelemetryOrFillsNvidiaSmis) {
  StandIns t;
  t.s.dcgmi_dmon = true;
  setenv("FAKE_DCGMI_DMON",
         llmwatch::testing::fixture("gpu/dcgmi-dmon-h100-load-hw-slowdown.txt").c_str(), 1);
  t.s.nvidia_smi = "";
  auto r = t.check();
  EXPECT_EQ(r.verdict, Verdict::Ok) << r.headline();
  EXPECT_NE(std::find(r.sources.begin(), r.sources.end(), "dcgmi-dmon"), r.sources.end());
  ASSERT_EQ(r.telemetry.size(), 4u);
  EXPECT_EQ(describe(r.telemetry[2]),
            "GPU 2: HW Slowdown; SM clock 1095/1980 MHz, 312/700 W, 84 °C, 100% busy");
  // Beside nvidia-smi (an idle H100, GPU 0): its own figures stay, DCGM's fill the rest.
  t.s.nvidia_smi = std::string(LLMWATCH_TEST_HELPERS) + "/fake-nvidia-smi";
  auto both = t.check();
  ASSERT_GE(both.telemetry.size(), 1u);
  auto alone = evaluate_node(
      "node-1", 1,
      [&] {
        auto in = gather_node_inputs(t.s, "node-1");
        in.dmon.reset();
        return in;
      }(),
      t.s, *load_xid_table("").table);
  ASSERT_GE(alone.telemetry.size(), 1u);
  EXPECT_EQ(both.telemetry[0].sm_mhz, alone.telemetry[0].sm_mhz) << "nvidia-smi's own figure";
  // A dmon that cannot answer (no host engine) is said, but telemetry is evidence, not health:
  // the node's verdict stands (a repaired node must still pass its check to be undrained).
  setenv("FAKE_DCGMI_DMON", "/nonexistent", 1);
  auto without = t.check();
  EXPECT_EQ(without.verdict, Verdict::Ok) << without.headline();
  EXPECT_TRUE(without.telemetry.empty() || without.telemetry.size() == 1);
  bool said = false;
  for (const auto& item : without.items)
    said |= item.check == "dcgmi-dmon" && item.summary.find("telemetry only") != std::string::npos;
  EXPECT_TRUE(said);
  unsetenv("FAKE_DCGMI_DMON");
}
