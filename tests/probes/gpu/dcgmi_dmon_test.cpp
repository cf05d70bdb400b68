// `dcgmi dmon -e <fields> -c 1` (#28): the slow node's telemetry where DCGM is present, read by
// the position of each field asked for; "N/A" is not known, never 0.
#include "probes/gpu/dcgmi_dmon.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace llmwatch {
namespace {

TEST(DcgmiDmon, EachGpusFiguresAndReasonsAreRead) {
  auto p = parse_dcgmi_dmon(
      testing::read_file(testing::fixture("gpu/dcgmi-dmon-h100-load-hw-slowdown.txt")));
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.gpus.size(), 4u);
  const GpuTelemetry& held = p.gpus[2];
  EXPECT_EQ(held.gpu, 2);
  EXPECT_EQ(held.reasons, std::vector<std::string>{"HW Slowdown"});
  EXPECT_TRUE(held.held_back());
  EXPECT_EQ(describe(held),
            "GPU 2: HW Slowdown; SM clock 1095/1980 MHz, 312/700 W, 84 °C, 100% busy");
  EXPECT_TRUE(p.gpus[0].reasons.empty());
  EXPECT_FALSE(p.gpus[0].held_back());
  // GPU 3: at its power cap (a policy, not its hardware), and no PCIe figures from DCGM.
  EXPECT_EQ(p.gpus[3].reasons, std::vector<std::string>{"SW Power Cap"});
  EXPECT_FALSE(p.gpus[3].held_back());
  EXPECT_FALSE(p.gpus[3].pcie_width.has_value());
  EXPECT_EQ(p.gpus[0].pcie_width, 16);
}

TEST(DcgmiDmon, ATableThatIsNotTheFieldsAskedIsAnErrorNotAHealthyGpu) {
  const std::string header =
      "#Entity   SMCLK  SMMAX  DVCCTR  TMPTR  POWER  ENFPL  GPUTL  PCILG  PCIMG  PCILW  PCIMW\n"
      "ID        MHZ    MHZ            C      W      W\n";
  for (const std::string& text : {
           std::string(""), std::string("Error setting watches. Result: -29: requires root\n"),
           std::string("#Entity   SMCLK  POWER\nID\nGPU 0     1980   600.000\n"),  // other fields
           "GPU 0  1980 1980 0 61 632.118 700.000 100 5 5 16 16\n" + header,  // row before header
           header + "GPU 0  1980 1980 0 61 632.118 700.000 100 5 5 16\n",     // a value missing
           header + "GPU x  1980 1980 0 61 632.118 700.000 100 5 5 16 16\n",  // not a GPU index
       }) {
    auto p = parse_dcgmi_dmon(text);
    EXPECT_FALSE(p.ok()) << text;
    EXPECT_TRUE(p.gpus.empty()) << text;
  }
  // Other entities' rows and the units line are not GPUs; junk values are not known.
  auto p = parse_dcgmi_dmon(header +
                            "GPU 0     1980  1980  9  N/A  -5  inf  100  5  5  16  16\n"
                            "GPU-I 0   1980  1980  0  61  632.118  700.000  100  5  5  16  16\n"
                            "Switch 0  N/A N/A N/A N/A N/A N/A N/A N/A N/A N/A N/A\n");
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_FALSE(p.gpus[0].temp_c.has_value());
  EXPECT_FALSE(p.gpus[0].power_w.has_value());
  EXPECT_FALSE(p.gpus[0].power_limit_w.has_value());
  EXPECT_EQ(p.gpus[0].reasons, std::vector<std::string>{"HW Slowdown"})
      << "bit 0x1 (idle) is not a reason a run is slow";
}

// With -c above 1 each sample repeats every GPU (and the header every 14): the newest counts.
TEST(DcgmiDmon, TheLastSampleOfAGpuIsItsFigure) {
  auto text = testing::read_file(testing::fixture("gpu/dcgmi-dmon-h100-load-hw-slowdown.txt"));
  text += "GPU 2     1980  1980  0  70  650.000  700.000  100  5  5  16  16\n";
  auto p = parse_dcgmi_dmon(text);
  ASSERT_TRUE(p.ok()) << p.error;
  ASSERT_EQ(p.gpus.size(), 4u);
  EXPECT_EQ(p.gpus[2].sm_mhz, 1980);
  EXPECT_TRUE(p.gpus[2].reasons.empty());
}

}  // namespace
}  // namespace llmwatch
