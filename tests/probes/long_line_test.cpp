// Every parser that applies a std::regex to text we do not control, fed one very long line.
// libstdc++ matches by recursion, a few stack frames per character a repeat consumes, so a
// line of some hundred KiB overflowed the stack and killed llmwatch: a training log with one
// huge line (a dumped tensor, a progress bar without newlines) would stop supervision for good.
// Found by fuzz.nvidia_smi_text in CI (the `Link N: (.*)` pattern).
#include <gtest/gtest.h>

#include <string>

#include "probes/gpu/dcgmi.h"
#include "probes/gpu/gpu_record.h"
#include "probes/gpu/xid_line.h"
#include "probes/quota.h"
#include "probes/training_log.h"

namespace llmwatch {
namespace {

const std::string& huge() {
  static const std::string s(4u << 20, 'x');  // 4 MiB
  return s;
}

TEST(LongLine, NvlinkStatusLinkLine) {
  auto gpus = parse_nvlink_status("GPU 0: NVIDIA H100 (UUID: x)\n\t Link 0: " + huge() + "\n");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].links, 1);
  EXPECT_EQ(gpus[0].inactive, 0);
  auto down = parse_nvlink_status("GPU 0: x\n\t Link 3: <inactive>" + huge() + "\n");
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].inactive, 1);
}

TEST(LongLine, XidLineBodyAndPrefix) {
  auto e = parse_xid_line("[ 1.0] NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=py, " + huge());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 79);
  EXPECT_TRUE(e->from_kernel);
  auto p = parse_xid_line(huge() + " NVRM: Xid (PCI:0000:9b:00): 48, " + huge());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->xid, 48);
  EXPECT_FALSE(p->from_kernel);  // a prefix we cannot read is not the kernel's
}

TEST(LongLine, UserProgressRegex) {
  TrainingLogParser parser(R"(step=(\d+).*loss)");
  EXPECT_EQ(parser.parse("step=12 " + huge() + " loss").step, std::nullopt);
  EXPECT_EQ(parser.parse("step=12 loss=1.0 " + huge()).step, 12);
}

TEST(LongLine, DcgmiHealthAndCustomQuota) {
  EXPECT_EQ(parse_dcgmi_health("Overall Health " + std::string(4u << 20, ' ') + "Healthy"),
            std::nullopt);
  EXPECT_EQ(parse_dcgmi_health(huge() + "\n| Overall Health    | Healthy |\n"), "Healthy");
  auto q = parse_quota("custom", huge() + "\nused 1TiB of 2TiB\n", R"(used (\S+) of (\S+))");
  EXPECT_TRUE(q.ok()) << q.error;
  EXPECT_FALSE(parse_quota("custom", "used " + huge() + " of 2TiB", R"(used (\S+) of (\S+))").ok());
}

TEST(LongLine, NvidiaSmiXmlHugeOrUnclosedTag) {
  EXPECT_FALSE(parse_nvidia_smi_xml("<nvidia_smi_log><gpu id=\"" + huge() + "\"></gpu>").ok());
  EXPECT_FALSE(parse_nvidia_smi_xml("<nvidia_smi_log><gpu" + huge()).ok());
}

}  // namespace
}  // namespace llmwatch
