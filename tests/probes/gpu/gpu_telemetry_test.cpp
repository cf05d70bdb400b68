#include "probes/gpu/gpu_telemetry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/text.h"

namespace llmwatch {
namespace {

GpuTelemetry first_gpu(const GpuParse& p) {
  EXPECT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.gpus.size(), 1u);
  return p.gpus.empty() ? GpuTelemetry{} : gpu_telemetry(p.gpus.front());
}

std::string fixture_text(const char* name) {
  return testing::read_file(testing::fixture(std::string("gpu/") + name));
}

// What both output forms of the real H100 under gpu-burn say alike.
void expect_full_speed_under_load(const GpuTelemetry& t) {
  EXPECT_EQ(t.gpu, 0);
  EXPECT_EQ(t.sm_mhz, 1980.0);
  EXPECT_EQ(t.sm_max_mhz, 1980.0);
  EXPECT_EQ(t.power_limit_w, 700.0);
  EXPECT_EQ(t.util_pct, 100.0);
  EXPECT_TRUE(t.reasons.empty());
}

// The real H100 under gpu-burn, as --query-gpu prints it: full clock, 632 of 700 W, no reason.
TEST(GpuTelemetry, RealH100UnderLoadFromTheCsv) {
  auto t = first_gpu(parse_nvidia_smi_csv(fixture_text("nvidia-smi-query-h100-load.csv")));
  expect_full_speed_under_load(t);
  EXPECT_EQ(t.power_w, 631.95);
  EXPECT_EQ(t.pcie_width, 16.0);
  EXPECT_EQ(t.pcie_gen, 5.0);
  EXPECT_FALSE(t.held_back());
  EXPECT_EQ(t.clock_ratio(), 1.0);
}

// The same capture's -q report: the same figures from the indented layout (its power is the
// average the report prints, not the CSV's instant reading).
TEST(GpuTelemetry, RealH100UnderLoadFromTheQReport) {
  auto t = first_gpu(parse_nvidia_smi_q(fixture_text("nvidia-smi-q-h100-load.txt")));
  expect_full_speed_under_load(t);
  EXPECT_EQ(t.power_w, 629.45);
  EXPECT_EQ(t.temp_c, 59.0);
  EXPECT_EQ(t.pcie_gen_max, 5.0);
  EXPECT_EQ(t.pcie_width_max, 16.0);
  // Idle, the same GPU's -q says "Idle : Active": not a reason a run is slow.
  auto idle = first_gpu(parse_nvidia_smi_q(fixture_text("nvidia-smi-q-h100.txt")));
  EXPECT_TRUE(idle.reasons.empty());
  EXPECT_EQ(idle.util_pct, 0.0);
}

// Real captures by bench/gpu_capture.sh on lent machines (driver 580.159.04): an H200 and an
// H100 80GB HBM3, each idle, under a PyTorch bf16 matmul loop alone, the same loop with a second
// process on the GPU, and a 4-rank job whose ranks' CPU is contended. Both boards are 700 W,
// 1980 MHz, PCIe gen5 x16. Under load each GPU sits at its power cap and the clock wanders
// (1350-1560 MHz): a power cap is a reason nvidia-smi gives, not the GPU holding itself back.
struct RealCapture {
  const char* name;
  double sm, power, temp, util;
  bool capped;
};

void expect_capture(const GpuTelemetry& t, const RealCapture& c, const char* form) {
  SCOPED_TRACE(std::string(c.name) + " " + form);
  EXPECT_EQ(t.gpu, 0);
  EXPECT_EQ(t.sm_mhz, c.sm);
  EXPECT_EQ(t.sm_max_mhz, 1980.0);
  EXPECT_EQ(t.power_w, c.power);
  EXPECT_EQ(t.power_limit_w, 700.0);
  EXPECT_EQ(t.temp_c, c.temp);
  EXPECT_EQ(t.util_pct, c.util);
  EXPECT_EQ(t.pcie_gen, 5.0);
  EXPECT_EQ(t.pcie_width, 16.0);
  EXPECT_EQ(t.pcie_width_max, 16.0);
  EXPECT_EQ(t.reasons,
            c.capped ? std::vector<std::string>{"SW Power Cap"} : std::vector<std::string>{});
  EXPECT_FALSE(t.held_back());
}

// The counters a capture holds: the power cap's running total when capped, nothing of its own.
void expect_only_the_cap_counted(const GpuTelemetry& t, const RealCapture& c) {
  SCOPED_TRACE(c.name);
  ASSERT_TRUE(t.sw_power_cap_us.has_value());
  EXPECT_EQ(*t.sw_power_cap_us > 0, c.capped);
  EXPECT_EQ(t.hw_thermal_us, 0.0);
  EXPECT_EQ(t.hw_power_brake_us, 0.0);
  EXPECT_EQ(t.sw_thermal_us, 0.0);
}

TEST(GpuTelemetry, RealH200CapturesFromTheCsv) {
  for (const auto& c : {RealCapture{"idle", 345, 78.87, 43, 0, false},
                        RealCapture{"alone", 1455, 694.79, 67, 99, true},
                        RealCapture{"contended", 1560, 689.00, 67, 100, true},
                        RealCapture{"cpu-starved", 1890, 524.48, 64, 60, true}})
    expect_capture(first_gpu(parse_nvidia_smi_csv(fixture_text(
                       (std::string("h200-580.159.04/query-") + c.name + ".csv").c_str()))),
                   c, "csv");
}

// The H100's were asked with the clock-event counters too, as llmwatch asks first: every
// counter read, the power cap's growing from one moment to the next (the same GPU, in order).
TEST(GpuTelemetry, RealH100CapturesFromTheCsv) {
  double cap_before = -1;
  for (const auto& c : {RealCapture{"idle", 345, 72.45, 44, 0, false},
                        RealCapture{"alone", 1380, 696.77, 73, 100, true},
                        RealCapture{"contended", 1530, 691.14, 74, 100, true},
                        RealCapture{"cpu-starved", 1755, 533.71, 71, 47, true}}) {
    auto t = first_gpu(parse_nvidia_smi_csv(
        fixture_text((std::string("h100-580.159.04/query-") + c.name + ".csv").c_str())));
    expect_capture(t, c, "csv");
    expect_only_the_cap_counted(t, c);
    EXPECT_GE(t.sw_power_cap_us.value_or(-1), cap_before);
    cap_before = t.sw_power_cap_us.value_or(-1);
  }
}

// The same moments' -q reports, a few milliseconds later: the report's power is its average.
// Its "Clocks Event Reasons Counters" (microseconds under each reason) are not active reasons.
void expect_q_reports(const std::string& machine, std::initializer_list<RealCapture> moments) {
  for (const auto& c : moments) {
    auto t =
        first_gpu(parse_nvidia_smi_q(fixture_text((machine + "/q-" + c.name + ".txt").c_str())));
    expect_capture(t, c, "-q");
    EXPECT_EQ(t.pcie_gen_max, 5.0);
    expect_only_the_cap_counted(t, c);
  }
}

TEST(GpuTelemetry, RealH200CapturesFromTheQReport) {
  expect_q_reports("h200-580.159.04", {RealCapture{"idle", 345, 78.91, 43, 0, false},
                                       RealCapture{"alone", 1485, 691.98, 67, 99, true},
                                       RealCapture{"contended", 1515, 689.19, 67, 100, true},
                                       RealCapture{"cpu-starved", 1620, 539.64, 65, 36, true}});
  auto perf = first_gpu(parse_nvidia_smi_q(fixture_text("h200-580.159.04/q-performance-load.txt")));
  EXPECT_EQ(perf.sw_power_cap_us, 15848702.0);  // -q -d PERFORMANCE, as the CSV said it
  EXPECT_EQ(perf.reasons, std::vector<std::string>{"SW Power Cap"});
}

// As on the H200, each -q report prints a second "Average Power Draw" after the board's, under
// "GPU Memory Power Readings": the board's is the one read.
TEST(GpuTelemetry, RealH100CapturesFromTheQReport) {
  expect_q_reports("h100-580.159.04", {RealCapture{"idle", 345, 72.49, 44, 0, false},
                                       RealCapture{"alone", 1350, 695.94, 72, 100, true},
                                       RealCapture{"contended", 1530, 690.11, 75, 100, true},
                                       RealCapture{"cpu-starved", 1725, 535.85, 68, 38, true}});
}

TEST(GpuTelemetry, AHardwareSlowdownIsHeldBackAndDescribed) {
  auto t =
      first_gpu(parse_nvidia_smi_csv(fixture_text("nvidia-smi-query-h100-load-hw-slowdown.csv")));
  EXPECT_EQ(t.reasons, std::vector<std::string>{"HW Slowdown"});
  EXPECT_TRUE(t.held_back());
  EXPECT_NEAR(*t.clock_ratio(), 1095.0 / 1980, 1e-9);
  EXPECT_EQ(describe(t), "GPU 0: HW Slowdown; SM clock 1095/1980 MHz, 312/700 W, 59 °C, 100% busy");
}

// In the -q layout HW Thermal Slowdown sits under HW Slowdown; both older ("Clocks Throttle
// Reasons", "Power Readings") and newer section names are read.
TEST(GpuTelemetry, QReportReasonsInBothLayouts) {
  auto t = first_gpu(
      parse_nvidia_smi_q("GPU 00000000:07:00.0\n"
                         "    Minor Number                          : 3\n"
                         "    Utilization\n        Gpu                               : 97 %\n"
                         "    Clocks Throttle Reasons\n"
                         "        SW Power Cap                      : Active\n"
                         "        HW Slowdown                       : Not Active\n"
                         "            HW Thermal Slowdown           : Active\n"
                         "    Clocks Throttle Reasons Counters\n"
                         "        Sync Boost                        : Active\n"
                         "    Power Readings\n"
                         "        Power Draw                        : 250.00 W\n"
                         "        Enforced Power Limit              : 300.00 W\n"));
  EXPECT_EQ(t.gpu, 3);
  EXPECT_EQ(t.reasons, (std::vector<std::string>{"HW Thermal Slowdown", "SW Power Cap"}));
  EXPECT_TRUE(t.held_back());
  EXPECT_EQ(t.power_w, 250.0);
  EXPECT_EQ(t.power_limit_w, 300.0);
  EXPECT_EQ(t.util_pct, 97.0);
}

TEST(GpuTelemetry, APowerCapAloneIsNotTheGpuHoldingItselfBack) {
  GpuTelemetry t;
  t.reasons = {"SW Power Cap", "Sync Boost"};
  EXPECT_FALSE(t.held_back());
}

TEST(GpuTelemetry, JsonRoundTripAndHostileInput) {
  auto t =
      first_gpu(parse_nvidia_smi_csv(fixture_text("nvidia-smi-query-h100-load-hw-slowdown.csv")));
  ASSERT_TRUE(t.sw_power_cap_us && t.hw_thermal_us);  // the capture has every counter
  auto back = telemetry_from_json(telemetry_to_json({t}));
  ASSERT_EQ(back.size(), 1u);
  auto kept = t;
  kept.sw_power_cap_us.reset();  // the power cap's counter is not kept: policy, never a cause
  EXPECT_EQ(back.front(), kept);
  // Wrong types, negative and huge figures: skipped or not known, never a throw.
  auto odd = telemetry_from_json(nlohmann::json::parse(
      R"([1, "x", {"gpu": 1e30, "sm_mhz": "fast", "power_w": -5, "reasons": [3, "HW Slowdown"]}])"));
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].gpu, -1);
  EXPECT_FALSE(odd[0].sm_mhz);
  EXPECT_FALSE(odd[0].power_w);
  EXPECT_EQ(odd[0].reasons, std::vector<std::string>{"HW Slowdown"});
  EXPECT_TRUE(telemetry_from_json(nlohmann::json::object()).empty());
}

// The store writes a sample as text straight away (telemetry_json_text): it reads back exactly as
// the document telemetry_to_json builds, dumped, for every real capture and for hostile figures and
// reasons (not finite, bytes that are not UTF-8, quotes and escapes), and is always valid JSON.
TEST(GpuTelemetry, TheTextFormReadsBackAsTheDocumentForm) {
  std::vector<std::vector<GpuTelemetry>> cases;
  for (const char* name : {"nvidia-smi-query-h100-load-hw-slowdown.csv"})
    cases.push_back(gpu_telemetry(parse_nvidia_smi_csv(fixture_text(name)).gpus));
  for (const char* machine : {"h200-580.159.04", "h100-580.159.04"})
    for (const char* moment : {"idle", "alone", "contended", "cpu-starved"})
      cases.push_back(gpu_telemetry(
          parse_nvidia_smi_csv(
              fixture_text((std::string(machine) + "/query-" + moment + ".csv").c_str()))
              .gpus));
  for (const auto& capture : cases) ASSERT_FALSE(capture.empty()) << "a capture read nothing";
  GpuTelemetry odd;
  odd.gpu = 3;
  odd.sm_mhz = NAN;
  odd.power_w = INFINITY;
  odd.temp_c = 1e300;
  odd.hw_thermal_us = 0.0;
  odd.reasons = {"HW \"Slowdown\"\\", "\xff\xfe bad", "\x1b[2J", ""};
  cases.push_back({odd, GpuTelemetry{}});
  cases.push_back({});
  for (const auto& gpus : cases) {
    const std::string text = telemetry_json_text(gpus);
    auto parsed = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << text;
    // As the store wrote it before: the document, dumped valid UTF-8 (util/text.h).
    EXPECT_EQ(telemetry_from_json(parsed),
              telemetry_from_json(nlohmann::json::parse(json_dump(telemetry_to_json(gpus)))))
        << text;
  }
}

// A node keeps 16 samples of every GPU: a healthy GPU's counters (all 0) are written as
// "counted": 1 alone, and read back as 0, not as unknown; one that is not 0 is written.
TEST(GpuTelemetry, ZeroCountersAreKeptAsCountedAlone) {
  GpuTelemetry t;
  t.gpu = 1;
  t.sw_thermal_us = 0.0;
  t.hw_thermal_us = 0.0;
  t.hw_power_brake_us = 0.0;
  auto j = telemetry_to_json({t});
  EXPECT_EQ(j.dump(), R"([{"counted":1,"gpu":1}])");
  ASSERT_EQ(telemetry_from_json(j).size(), 1u);
  EXPECT_EQ(telemetry_from_json(j)[0], t);
  t.hw_thermal_us = 4.2e6;
  EXPECT_EQ(telemetry_from_json(telemetry_to_json({t}))[0], t);
  t.sw_thermal_us.reset();  // not all known: each as it is, none read as 0
  auto partial = telemetry_from_json(telemetry_to_json({t}))[0];
  EXPECT_EQ(partial, t);
  EXPECT_FALSE(partial.sw_thermal_us);
  auto odd = telemetry_from_json(
      nlohmann::json::parse(R"([{"gpu": 0, "counted": "yes", "hw_thermal_us": "x"}])"));
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].hw_thermal_us, 0.0);
}

}  // namespace
}  // namespace llmwatch
