#include "rules/node_health.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/strings.h"

using namespace llmwatch;

namespace {

XidTable table() {
  return *load_xid_table("").table;
}

std::vector<XidEvent> xids_of(const std::string& text) {
  std::vector<XidEvent> out;
  for (const auto& line : split(text, '\n'))
    if (auto e = parse_xid_line(line)) out.push_back(*e);
  return out;
}

// An H100-like node of 8 GPUs whose GPU 4 sits at the bus id of the Xid 119 capture.
GpuParse eight_gpus() {
  std::string csv =
      "index, pci.bus_id, ecc.errors.uncorrected.volatile.total, remapped_rows.pending, "
      "remapped_rows.failure, gpu_recovery_action\n";
  const char* buses[] = {"18", "2a", "3a", "5d", "9b", "ab", "ba", "db"};
  for (int i = 0; i < 8; ++i)
    csv += std::to_string(i) + ", 00000000:" + buses[i] + ":00.0, 0, No, No, None\n";
  return parse_nvidia_smi_csv(csv);
}

}  // namespace

TEST(NodeHealth, RealH100CaptureIsHealthy) {
  NodeInputs in;
  in.gpus = parse_nvidia_smi_csv(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvidia-smi-query-h100.csv")));
  in.nvlink = parse_nvlink_status(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvlink-status-h100.txt")));
  in.xids = std::vector<XidEvent>{};
  GpuSettings s;
  s.expected_gpus = 1;
  auto r = evaluate_node("node-1", 100, in, s, table());
  EXPECT_EQ(r.verdict, Verdict::Ok) << r.headline();
  EXPECT_EQ(nagios_code(r.verdict), 0);
  EXPECT_EQ(r.gpus.at(0), Verdict::Ok);
  EXPECT_EQ(r.headline(), "all checks passed");
}

// A real H200 and a real H100 (driver 580.159.04, bench/gpu_capture.sh), idle and under a
// PyTorch load at their power cap, in each form nvidia-smi prints: healthy, and the same health
// fields whichever form.
void expect_healthy_in_every_form(const std::string& machine, const std::string& gpu_name) {
  SCOPED_TRACE(machine);
  auto capture = [&](const std::string& name) {
    return llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/" + machine + "/" + name));
  };
  std::vector<std::pair<std::string, GpuParse>> forms = {
      {"xml", parse_nvidia_smi_xml(capture("q-x-idle.xml"))}};
  for (std::string moment : {"idle", "alone", "contended", "cpu-starved"}) {
    forms.emplace_back(moment + " csv", parse_nvidia_smi_csv(capture("query-" + moment + ".csv")));
    forms.emplace_back(moment + " -q", parse_nvidia_smi_q(capture("q-" + moment + ".txt")));
  }
  GpuSettings s;
  s.expected_gpus = 1;
  for (const auto& [form, parse] : forms) {
    SCOPED_TRACE(form);
    ASSERT_TRUE(parse.ok()) << parse.error;
    ASSERT_EQ(parse.gpus.size(), 1u);
    const auto& g = parse.gpus[0];
    EXPECT_EQ(g.bus_id(), "0000:00:06");
    EXPECT_EQ(g.text("name"), gpu_name);
    EXPECT_EQ(g.number("ecc.errors.uncorrected.volatile.total")
                  .value_or(g.number("ecc.errors.uncorrected.volatile.dram").value_or(-1)),
              0.0);
    EXPECT_EQ(g.flag("remapped_rows.pending"), false);
    EXPECT_EQ(g.flag("remapped_rows.failure"), false);
    EXPECT_EQ(g.number("pcie.link.width.current"), 16.0);
    EXPECT_FALSE(g.number("retired_pages.double_bit.count"));  // [N/A]: Hopper remaps rows
    NodeInputs in;
    in.gpus = parse;
    in.xids = std::vector<XidEvent>{};
    auto r = evaluate_node("node-1", 100, in, s, table());
    EXPECT_EQ(r.verdict, Verdict::Ok) << r.headline();
  }
}

TEST(NodeHealth, RealH200AndH100CapturesAreHealthyInEveryForm) {
  expect_healthy_in_every_form("h200-580.159.04", "NVIDIA H200");
  expect_healthy_in_every_form("h100-580.159.04", "NVIDIA H100 80GB HBM3");
}

TEST(NodeHealth, Xid119IsCriticalWithTheGpuIndex) {
  NodeInputs in;
  in.xids = xids_of(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dmesg-with-xid-119.log")));
  in.gpus = eight_gpus();
  auto r = evaluate_node("node-2", 100, in, GpuSettings{}, table());
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_EQ(nagios_code(r.verdict), 2);
  EXPECT_EQ(r.gpus.at(4), Verdict::Critical);
  EXPECT_EQ(r.gpus.at(3), Verdict::Ok);
  EXPECT_TRUE(r.wants_drain());
  EXPECT_EQ(r.headline(), "Xid 119 GPU 4: GSP RPC timeout (5 times)");
  ASSERT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.items[0].hint, "reset");
  EXPECT_EQ(r.items[0].evidence.size(), 3u);
}

TEST(NodeHealth, XidWithoutNvidiaSmiNamesTheBus) {
  NodeInputs in;
  in.xids = xids_of(
      "[1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.");
  auto r = evaluate_node("n", 1, in, GpuSettings{}, table());
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_EQ(r.headline(),
            "Xid 79 PCI 0000:3b:00: GPU has fallen off the bus; reboot, RMA if it recurs");
}

TEST(NodeHealth, AppLevelIgnoredRepeatAndRecoveryChange) {
  GpuSettings s;
  NodeInputs app;
  app.xids = xids_of(
      "NVRM: Xid (PCI:0000:18:00): 31, pid=7, name=python, MMU Fault\nNVRM: Xid (PCI:0000:18:00): "
      "43, pid=7, name=python, x");
  app.gpus = eight_gpus();
  auto r = evaluate_node("n", 1, app, s, table());
  EXPECT_EQ(r.verdict, Verdict::Warn);  // 31 is the application's; 43 is ignored
  EXPECT_FALSE(r.wants_drain());

  NodeInputs repeat;
  std::string lines;
  for (int i = 0; i < 3; ++i)
    lines += "NVRM: Xid (PCI:0000:18:00): 32, pid=7, name=python, PBDMA\n";
  repeat.xids = xids_of(lines);
  EXPECT_EQ(evaluate_node("n", 1, repeat, s, table()).verdict, Verdict::Critical);  // repeat = 3

  NodeInputs changed;
  changed.xids = xids_of(
      "4,10,5,-;NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to "
      "0x2 (Node Reboot Required)");
  EXPECT_EQ(evaluate_node("n", 1, changed, s, table()).verdict, Verdict::Critical);
  NodeInputs none;
  none.xids = xids_of(
      "4,11,5,-;NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x1 (GPU Reset "
      "Required) to 0x0 (None)");
  EXPECT_EQ(evaluate_node("n", 1, none, s, table()).verdict, Verdict::Ok);
}

TEST(NodeHealth, V100PageRetirementBadIsCriticalGoodIsOk) {
  GpuSettings s;
  NodeInputs bad;
  bad.gpus = parse_nvidia_smi_q(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/nvidia-smi-q-page-retirement-v100-bad.txt")));
  auto r = evaluate_node("n", 1, bad, s, table());
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_EQ(r.gpus.at(1), Verdict::Critical);  // DBE 61
  EXPECT_EQ(r.gpus.at(3), Verdict::Warn);      // pending, DBE 0
  EXPECT_EQ(r.gpus.at(2), Verdict::Ok);
  NodeInputs good;
  good.gpus = parse_nvidia_smi_q(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/nvidia-smi-q-page-retirement-v100-good.txt")));
  EXPECT_EQ(evaluate_node("n", 1, good, s, table()).verdict, Verdict::Ok);
}

TEST(NodeHealth, NvlinkAllInactiveIsCritical) {
  NodeInputs in;
  in.nvlink = parse_nvlink_status(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvlink-status-bad.txt")));
  auto r = evaluate_node("n", 1, in, GpuSettings{}, table());
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_EQ(r.gpus.at(6), Verdict::Critical);
  EXPECT_EQ(r.headline(), "GPU 6: all NVLinks inactive");
}

TEST(NodeHealth, DcgmiShapesAndHealth) {
  NodeInputs v3;
  v3.diag = parse_dcgmi_diag(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dcgmi-diag-r1-3x-fail.json")));
  EXPECT_EQ(evaluate_node("n", 1, v3, GpuSettings{}, table()).verdict, Verdict::Critical);
  NodeInputs v4;
  v4.diag = parse_dcgmi_diag(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/dcgmi-diag-r2-4x-shape-fail.json")));
  auto r = evaluate_node("n", 1, v4, GpuSettings{}, table());
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_EQ(r.gpus.at(1), Verdict::Critical);
  NodeInputs busy;
  busy.diag = parse_dcgmi_diag(R"({"DCGM GPU Diagnostic": {"runtime_error": "GPUs are busy"}})");
  EXPECT_EQ(evaluate_node("n", 1, busy, GpuSettings{}, table()).verdict, Verdict::Unknown);
  NodeInputs health;
  health.health = "Warning";
  EXPECT_EQ(evaluate_node("n", 1, health, GpuSettings{}, table()).verdict, Verdict::Warn);
}

// What dcgmi diag measured is the node's figure, judged against the fleet's (fleet_figures.h),
// named by its source; the figures' test failing is the verdict's, as before.
TEST(NodeHealth, DcgmiDiagFiguresAreTheNodesFigures) {
  NodeInputs in;
  in.diag = parse_dcgmi_diag(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dcgmi-diag-r3-4x-perf.json")));
  auto r = evaluate_node("n", 1, in, GpuSettings{}, table());
  EXPECT_EQ(r.figures.at("dcgmi-diag/diagnostic/gflops"), 47988.02);
  EXPECT_EQ(r.figures.at("dcgmi-diag/pcie/h2d_gbps"), 25.96);
  EXPECT_EQ(r.figures.size(), 5u);
  EXPECT_EQ(r.verdict, Verdict::Critical);  // targeted_stress failed on GPU 1
  NodeInputs busy;
  busy.diag = parse_dcgmi_diag(R"({"DCGM GPU Diagnostic": {"runtime_error": "GPUs are busy"}})");
  EXPECT_TRUE(evaluate_node("n", 1, busy, GpuSettings{}, table()).figures.empty());
}

TEST(NodeHealth, CountersRemapRecoveryPcieAndGpuCount) {
  auto csv = [](const std::string& row) {
    return parse_nvidia_smi_csv(
        "index, pci.bus_id, remapped_rows.pending, remapped_rows.failure, gpu_recovery_action, "
        "pcie.link.width.current, pcie.link.width.max, ecc.errors.uncorrected.volatile.total\n" +
        row);
  };
  GpuSettings s;
  auto verdict = [&](const std::string& row) {
    NodeInputs in;
    in.gpus = csv(row);
    return evaluate_node("n", 1, in, s, table());
  };
  EXPECT_EQ(verdict("0, 0000:18:00.0, Yes, No, None, 16, 16, 0\n").verdict, Verdict::Warn);
  EXPECT_EQ(verdict("0, 0000:18:00.0, Yes, No, None, 16, 16, 0\n").items[0].hint, "save");
  EXPECT_EQ(verdict("0, 0000:18:00.0, No, Yes, None, 16, 16, 0\n").verdict, Verdict::Critical);
  EXPECT_EQ(verdict("0, 0000:18:00.0, No, No, GPU Reset, 16, 16, 0\n").verdict, Verdict::Critical);
  EXPECT_EQ(verdict("0, 0000:18:00.0, No, No, None, 8, 16, 0\n").verdict, Verdict::Warn);
  EXPECT_EQ(verdict("0, 0000:18:00.0, No, No, None, 16, 16, 3\n").verdict, Verdict::Critical);
  // MIG and older drivers: N/A everywhere is not a fault.
  EXPECT_EQ(verdict("0, 0000:18:00.0, N/A, N/A, [N/A], [N/A], [N/A], [N/A]\n").verdict,
            Verdict::Ok);
  s.expected_gpus = 8;
  EXPECT_EQ(verdict("0, 0000:18:00.0, No, No, None, 16, 16, 0\n").headline(),
            "1 of 8 GPUs visible");
}

TEST(NodeHealth, FailingSourceIsUnknownNeverCritical) {
  NodeInputs in;
  in.errors.emplace_back("nvidia-smi", "timed out after 20s");
  auto r = evaluate_node("n", 1, in, GpuSettings{}, table());
  EXPECT_EQ(r.verdict, Verdict::Unknown);
  EXPECT_EQ(nagios_code(r.verdict), 3);
  EXPECT_FALSE(r.wants_drain());
  // A proven fault still stands beside a source that could not look.
  in.xids = xids_of("NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus.");
  EXPECT_EQ(evaluate_node("n", 1, in, GpuSettings{}, table()).verdict, Verdict::Critical);
}

TEST(NodeReport, JsonRoundTrip) {
  NodeInputs in;
  in.xids = xids_of(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dmesg-with-xid-119.log")));
  in.gpus = eight_gpus();
  in.gpu_processes = 0;
  auto r = evaluate_node("node-2", 123.5, in, GpuSettings{}, table());
  auto back = NodeReport::from_json(r.to_json());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->node, "node-2");
  EXPECT_EQ(back->verdict, Verdict::Critical);
  EXPECT_EQ(back->gpus.at(4), Verdict::Critical);
  EXPECT_EQ(back->headline(), r.headline());
  EXPECT_EQ(back->gpu_processes, 0);
  auto other = NodeReport::from_json("{\"schema\": \"other\"}");
  EXPECT_FALSE(other);
  EXPECT_NE(other.error().find("not an llmwatch.node-check/1"), std::string::npos);
  auto partial = NodeReport::from_json("{\"schema\": \"llmwatch.node-check/1\"}");
  EXPECT_FALSE(partial);
  EXPECT_NE(partial.error().find("malformed node report"), std::string::npos);
}

// A site's own check that a node ran ([[check]] where = "nodes"): its CRITICAL is the node's,
// and its hint says what to do (drain, a reboot, or nothing but the alert).
TEST(NodeHealth, ASiteChecksCriticalIsTheNodesWithItsHint) {
  NodeInputs in;
  NodePluginRun nhc{"nhc", "drain", {}, false};
  nhc.answer.code = 2;
  nhc.answer.summary = "ERROR: nhc: Health check failed: check_fs_mount: /lustre not mounted";
  in.plugins.push_back(nhc);
  auto r = evaluate_node("node-2", 100, in, GpuSettings{}, table());
  EXPECT_EQ(r.verdict, Verdict::Critical);
  EXPECT_TRUE(r.wants_drain());
  EXPECT_NE(r.headline().find("nhc: ERROR: nhc: Health check failed"), std::string::npos)
      << r.headline();
  in.plugins[0].hint = "";  // hint = "none"
  EXPECT_FALSE(evaluate_node("node-2", 100, in, GpuSettings{}, table()).wants_drain());
  in.plugins[0].answer.code = 3;  // could not look: never a fault
  auto unknown = evaluate_node("node-2", 100, in, GpuSettings{}, table());
  EXPECT_EQ(unknown.verdict, Verdict::Unknown);
  EXPECT_FALSE(unknown.wants_drain());
  in.plugins[0].answer.code = 0;
  auto ok = evaluate_node("node-2", 100, in, GpuSettings{}, table());
  EXPECT_EQ(ok.verdict, Verdict::Ok);
  EXPECT_EQ(ok.sources, std::vector<std::string>{"check:nhc"});
}
