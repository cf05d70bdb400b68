#include "probes/gpu/xid_line.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/strings.h"

using namespace llmwatch;

TEST(XidLine, DmesgTimeWithPciPrefixFromTheRealCapture) {
  auto text =
      llmwatch::testing::read_file(llmwatch::testing::fixture("gpu/dmesg-with-xid-119.log"));
  std::vector<XidEvent> xids;
  for (const auto& line : split(text, '\n'))
    if (auto e = parse_xid_line(line)) xids.push_back(*e);
  ASSERT_EQ(xids.size(), 5u);  // five Xid 119 lines among 40-odd NVRM/stack lines
  EXPECT_EQ(xids[0].xid, 119);
  EXPECT_EQ(xids[0].bus_id, "0000:9b:00");
  EXPECT_EQ(xids[0].when, "Sun Feb 23 16:24:18 2025");
  EXPECT_EQ(xids[0].pid, "2024380");
  EXPECT_EQ(xids[0].process, "nvidia-smi");
  EXPECT_NE(xids[0].text.find("Timeout after 6s"), std::string::npos);
  EXPECT_EQ(xids[2].when, "Sun Feb 23 16:24:30 2025");
  EXPECT_EQ(xids[4].process, "gpud");
}

TEST(XidLine, RawDmesgUnknownPidAndNoPciPrefix) {
  auto e = parse_xid_line(
      "[171167.620236] NVRM: Xid (0000:03:00): 79, pid='<unknown>', name=<unknown>, GPU has "
      "fallen off the bus.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 79);
  EXPECT_EQ(e->bus_id, "0000:03:00");
  EXPECT_EQ(e->when, "171167.620236");
  EXPECT_EQ(e->pid, "");
  EXPECT_EQ(e->process, "");
  EXPECT_EQ(e->text, "GPU has fallen off the bus.");
}

TEST(XidLine, SyslogRowRemapperWithPid) {
  auto e = parse_xid_line(
      "Aug 17 06:18:01 gpu-node-12 kernel: NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row "
      "Remapper: New row (0x00000000000a3c1e) marked for remapping, reset gpu to activate.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 63);
  EXPECT_EQ(e->bus_id, "0000:10:1c");
  EXPECT_EQ(e->when, "Aug 17 06:18:01");
  EXPECT_EQ(e->pid, "1896");
  EXPECT_EQ(e->process, "");
  EXPECT_EQ(e->text.rfind("Row Remapper", 0), 0u);
}

TEST(XidLine, KmsgRecordNvlink5AndRecoveryActionChange) {
  auto nvl = parse_xid_line(
      "3,1234,5678901,-;NVRM: Xid (PCI:0000:9b:00): 149, NETIR_LINK_EVT  Fatal error detected "
      "on port 5");
  ASSERT_TRUE(nvl);
  EXPECT_EQ(nvl->xid, 149);
  EXPECT_EQ(nvl->kmsg_seq, 1234);
  EXPECT_EQ(nvl->when, "5678901us");
  EXPECT_EQ(nvl->text.rfind("NETIR_LINK_EVT", 0), 0u);

  auto changed = parse_xid_line(
      "4,1240,5679000,-;NVRM: Xid (PCI:0000:9b:00): 154, GPU recovery action changed from 0x4 "
      "(Drain and Reset) to 0x1 (GPU Reset Required)");
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->xid, 154);
  ASSERT_TRUE(changed->new_recovery_code);
  EXPECT_EQ(*changed->new_recovery_code, 1);
  EXPECT_EQ(changed->new_recovery_action, "GPU Reset Required");
}

TEST(XidLine, OnlyTheKernelIsTrusted) {
  auto by = [](const std::string& line) {
    auto e = parse_xid_line(line);
    return e && e->from_kernel;
  };
  const std::string body = "NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=x, GPU has fallen off";
  EXPECT_TRUE(by("Aug 17 06:18:01 gpu-12 kernel: " + body));
  EXPECT_TRUE(by("3,1234,5678901,-;" + body));  // kern.err
  EXPECT_TRUE(by("[171167.620236] " + body));
  EXPECT_FALSE(by("Aug 17 06:18:01 gpu-12 root: " + body));  // logger
  EXPECT_FALSE(by("Aug 17 06:18:01 gpu-12 kernel-helper[12]: " + body));
  EXPECT_FALSE(by("14,1234,5678901,-;" + body));  // user.info written to /dev/kmsg
  EXPECT_FALSE(by(body));
}

TEST(XidLine, NotAnXidLine) {
  EXPECT_FALSE(parse_xid_line("[Sun Feb 23 16:24:18 2025] NVRM: GPU at PCI:0000:9b:00: GPU-5096"));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:9b:00): notanumber, pid=1"));
  EXPECT_FALSE(parse_xid_line("NVRM: Xid (PCI:0000:9b:00): 99999999999999999999, x"));
  EXPECT_FALSE(parse_xid_line(""));
}
