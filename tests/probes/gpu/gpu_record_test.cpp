#include "probes/gpu/gpu_record.h"

#include <gtest/gtest.h>

#include "test_util.h"

using namespace llmwatch;

TEST(NvidiaSmiCsv, RealH100CaptureByHeaderName) {
  auto p = parse_nvidia_smi_csv(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvidia-smi-query-h100.csv")));
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.gpus.size(), 1u);
  const auto& g = p.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.bus_id(), "0000:00:09");
  EXPECT_EQ(g.number("ecc.errors.uncorrected.volatile.total"), 0.0);
  EXPECT_EQ(g.flag("remapped_rows.pending"), false);
  EXPECT_EQ(g.flag("remapped_rows.failure"), false);
  EXPECT_EQ(g.text("gpu_recovery_action"), "None");
  EXPECT_EQ(g.number("pcie.link.width.current"), 16.0);
  EXPECT_EQ(g.number("memory.total"), 81559.0);  // "81559 MiB", header "memory.total [MiB]"
  EXPECT_EQ(g.flag("clocks_event_reasons.hw_slowdown"), false);
  // [N/A] and "[Requested functionality has been deprecated]" are "no value", not zero.
  EXPECT_FALSE(g.number("retired_pages.double_bit.count"));
  EXPECT_FALSE(g.text("display_mode"));
}

TEST(NvidiaSmiCsv, RejectsHeaderlessAndRaggedOutput) {
  EXPECT_FALSE(parse_nvidia_smi_csv("0, 00000000:00:09.0, 0\n").ok());
  auto ragged = parse_nvidia_smi_csv("index, pci.bus_id\n0, 0000:01:00.0, extra\n");
  EXPECT_FALSE(ragged.ok());
  EXPECT_NE(ragged.error.find("line 2"), std::string::npos);
  EXPECT_FALSE(parse_nvidia_smi_csv("").ok());
}

TEST(NvidiaSmiQ, V100PageRetirementGoodAndBad) {
  auto bad = parse_nvidia_smi_q(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/nvidia-smi-q-page-retirement-v100-bad.txt")));
  ASSERT_TRUE(bad.ok()) << bad.error;
  ASSERT_EQ(bad.gpus.size(), 8u);
  EXPECT_EQ(bad.gpus[1].number("retired_pages.double_bit.count"), 61.0);
  EXPECT_EQ(bad.gpus[1].flag("retired_pages.pending"), true);
  EXPECT_EQ(bad.gpus[1].bus_id(), "0002:00:00");
  auto good = parse_nvidia_smi_q(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/nvidia-smi-q-page-retirement-v100-good.txt")));
  ASSERT_EQ(good.gpus.size(), 8u);
  for (const auto& g : good.gpus) EXPECT_EQ(g.flag("retired_pages.pending"), false);
}

TEST(NvidiaSmiQ, H100FullReport) {
  auto p = parse_nvidia_smi_q(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvidia-smi-q-h100.txt")));
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].flag("remapped_rows.pending"), false);
  EXPECT_EQ(p.gpus[0].text("gpu_recovery_action"), "None");
  EXPECT_FALSE(p.gpus[0].number("retired_pages.double_bit.count"));  // N/A on Hopper
  // The defect: the ECC lines of the -q text form were skipped, so an uncorrectable ECC
  // error never reached the node-health rule from this source.
  EXPECT_EQ(p.gpus[0].number("ecc.errors.uncorrected.volatile.dram"), 0.0);
  std::string text =
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvidia-smi-q-h100.txt"));
  auto at = text.find("DRAM Uncorrectable                         : 0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("DRAM Uncorrectable                         : 0").size(),
               "DRAM Uncorrectable                         : 4");
  EXPECT_EQ(parse_nvidia_smi_q(text).gpus[0].number("ecc.errors.uncorrected.volatile.dram"), 4.0);
  // The older layout (V100 and before): Volatile / Double Bit / Total.
  auto old = parse_nvidia_smi_q(
      "GPU 00000000:3B:00.0\n    ECC Errors\n        Volatile\n            Single Bit\n"
      "                Total                   : 3\n            Double Bit\n"
      "                Device Memory           : 2\n                Total                   : 2\n");
  ASSERT_TRUE(old.ok()) << old.error;
  EXPECT_EQ(old.gpus[0].number("ecc.errors.uncorrected.volatile.total"), 2.0);
  EXPECT_EQ(old.gpus[0].number("ecc.errors.corrected.volatile.total"), 3.0);
}

// Each GPU's compute processes: -q's "Processes" section (real H200 and H100: idle, a trainer
// alone, a second process beside it, 4 ranks on one GPU; another H100 under gpu_burn and two
// memhogs).
TEST(NvidiaSmiQ, ComputeProcessesPerGpu) {
  auto count = [](const std::string& name) {
    auto p = parse_nvidia_smi_q(llmwatch::testing::read_file(llmwatch::testing::fixture(name)));
    EXPECT_TRUE(p.ok()) << name;
    return p.gpus.empty() ? std::nullopt : p.gpus[0].number(kComputeProcesses);
  };
  EXPECT_EQ(count("gpu/h200-580.159.04/q-idle.txt"), 0.0);  // "Processes : None"
  EXPECT_EQ(count("gpu/h200-580.159.04/q-alone.txt"), 1.0);
  EXPECT_EQ(count("gpu/h200-580.159.04/q-contended.txt"), 2.0);
  EXPECT_EQ(count("gpu/h200-580.159.04/q-cpu-starved.txt"), 4.0);
  EXPECT_EQ(count("gpu/h100-580.159.04/q-idle.txt"), 0.0);
  EXPECT_EQ(count("gpu/h100-580.159.04/q-alone.txt"), 1.0);
  EXPECT_EQ(count("gpu/h100-580.159.04/q-contended.txt"), 2.0);
  EXPECT_EQ(count("gpu/h100-580.159.04/q-cpu-starved.txt"), 4.0);
  EXPECT_EQ(count("gpu/nvidia-smi-q-h100-load.txt"), 3.0);
  // A report without the section (-q -d PAGE_RETIREMENT) does not know.
  EXPECT_FALSE(count("gpu/nvidia-smi-q-page-retirement-v100-good.txt"));
  // A graphics-only process is not a compute process.
  auto p = parse_nvidia_smi_q(
      "GPU 00000000:07:00.0\n    Processes\n        Process ID : 1\n            Type : G\n"
      "        Process ID : 2\n            Type : C+G\n");
  EXPECT_EQ(p.gpus.at(0).number(kComputeProcesses), 1.0);
}

// --query-compute-apps=pid,gpu_bus_id placed on the GPUs by bus id; what cannot be placed
// leaves every GPU not known rather than 0.
TEST(NvidiaSmiComputeApps, CountedPerGpuByBusId) {
  auto gpus = parse_nvidia_smi_csv("index, pci.bus_id\n0, 00000000:07:00.0\n1, 00000000:0F:00.0\n");
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE(set_compute_processes(
      gpus, "715, 00000000:0F:00.0\n742, 00000000:0f:00.0\n801, 00000000:07:00.0\n"));
  EXPECT_EQ(gpus.gpus[0].number(kComputeProcesses), 1.0);
  EXPECT_EQ(gpus.gpus[1].number(kComputeProcesses), 2.0);
  EXPECT_TRUE(set_compute_processes(gpus, "No running processes found\n"));
  EXPECT_EQ(gpus.gpus[1].number(kComputeProcesses), 0.0);
  for (const char* odd : {"715\n", "715, 00000000:99:00.0\n"}) {
    auto fresh = parse_nvidia_smi_csv("index, pci.bus_id\n0, 00000000:07:00.0\n");
    EXPECT_FALSE(set_compute_processes(fresh, odd)) << odd;
    EXPECT_FALSE(fresh.gpus[0].number(kComputeProcesses)) << odd;
  }
}

TEST(NvidiaSmiXml, RemapPendingNarrowLinkAndMigNotApplicable) {
  auto p = parse_nvidia_smi_xml(llmwatch::testing::read_file(
      llmwatch::testing::fixture("gpu/nvidia-smi-q-x-mig-sample.xml")));
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_EQ(p.gpus[0].flag("remapped_rows.pending"), true);
  EXPECT_EQ(p.gpus[0].number("pcie.link.width.current"), 8.0);
  EXPECT_EQ(p.gpus[0].number("ecc.errors.uncorrected.volatile.dram"), 2.0);
  EXPECT_EQ(p.gpus[1].index, 1);
  EXPECT_EQ(p.gpus[1].bus_id(), "0000:2a:00");
  EXPECT_FALSE(p.gpus[1].flag("remapped_rows.pending"));  // MIG: N/A, not "No"
  EXPECT_FALSE(parse_nvidia_smi_xml("<nvidia_smi_log></nvidia_smi_log>").ok());
  EXPECT_FALSE(parse_nvidia_smi_xml("<gpu id=\"x\"><a>1</b></gpu>").ok());
}

TEST(Nvlink, GoodBadAndH100) {
  auto good = parse_nvlink_status(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvlink-status-good.txt")));
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].index, 7);
  EXPECT_EQ(good[0].links, 12);
  EXPECT_EQ(good[0].inactive, 0);
  auto bad = parse_nvlink_status(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvlink-status-bad.txt")));
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_TRUE(bad[0].all_inactive);
  auto h100 = parse_nvlink_status(
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/nvlink-status-h100.txt")));
  ASSERT_EQ(h100.size(), 1u);
  EXPECT_EQ(h100[0].links, 18);
  auto one_down = parse_nvlink_status(
      "GPU 2: NVIDIA H100 (UUID: x)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n");
  EXPECT_EQ(one_down[0].inactive, 1);
}

TEST(BusId, NormalizesNvidiaSmiAndKernelForms) {
  EXPECT_EQ(normalize_bus_id("00000000:9B:00.0"), "0000:9b:00");
  EXPECT_EQ(normalize_bus_id("PCI:0000:9b:00"), "0000:9b:00");
  EXPECT_EQ(normalize_bus_id("0000:9b:00"), "0000:9b:00");
}
