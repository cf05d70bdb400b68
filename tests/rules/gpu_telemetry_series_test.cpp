#include "rules/gpu_telemetry_series.h"

#include <gtest/gtest.h>

#include "probes/gpu/gpu_record.h"
#include "test_util.h"

namespace llmwatch {
namespace {

GpuTelemetry gpu(int index, double sm, std::vector<std::string> reasons = {}) {
  GpuTelemetry t;
  t.gpu = index;
  t.sm_mhz = sm;
  t.sm_max_mhz = 1980;
  t.power_w = 600;
  t.power_limit_w = 700;
  t.util_pct = 100;
  t.reasons = std::move(reasons);
  return t;
}

// A node of 4 GPUs sampled every minute from t=1000; GPU 2 as `slow` makes it.
std::vector<TelemetrySample> node(int samples, GpuTelemetry (*slow)(int) = nullptr) {
  std::vector<TelemetrySample> out;
  for (int i = 0; i < samples; ++i) {
    TelemetrySample s{1000.0 + 60 * i, {}};
    for (int g = 0; g < 4; ++g) s.gpus.push_back(g == 2 && slow ? slow(i) : gpu(g, 1980));
    out.push_back(std::move(s));
  }
  return out;
}

// The evidence is one line, and it says `text`.
::testing::AssertionResult one_line_saying(const TelemetryEvidence& ev, const std::string& text) {
  if (ev.lines.size() != 1) return ::testing::AssertionFailure() << ev.lines.size() << " lines";
  if (ev.lines[0].find(text) == std::string::npos)
    return ::testing::AssertionFailure() << ev.lines[0];
  return ::testing::AssertionSuccess();
}

// The example: GPU 2 held back by HW Slowdown at 1095 of 1980 MHz names the cause.
TEST(GpuTelemetrySeries, AGpuHeldBackOverTheWindowIsTheCause) {
  auto own = node(6, [](int) { return gpu(2, 1095, {"HW Slowdown"}); });
  auto ev = telemetry_evidence("node-3", own, {node(6), node(6)}, 1000);
  EXPECT_EQ(ev.cause, "GPU 2 HW Slowdown, SM clock 1095/1980 MHz");
  ASSERT_EQ(ev.lines.size(), 1u) << "only the GPU that stands out";
  EXPECT_NE(ev.lines[0].find("held back in 6 of 6 samples over 5m"), std::string::npos)
      << ev.lines[0];
  EXPECT_NE(ev.lines[0].find("55% of its maximum, the job's other nodes' GPUs 100%"),
            std::string::npos)
      << ev.lines[0];
}

// One sample with a reason in a window of six is a moment, not a cause.
TEST(GpuTelemetrySeries, AMomentaryReasonIsNoCause) {
  auto own =
      node(6, [](int i) { return i == 3 ? gpu(2, 1500, {"HW Thermal Slowdown"}) : gpu(2, 1980); });
  auto ev = telemetry_evidence("node-3", own, {node(6)}, 1000);
  EXPECT_EQ(ev.cause, "");
  EXPECT_TRUE(one_line_saying(ev, "the slowness is not in its GPUs"));
}

// A clock far under the peers' with no reason given is still the cause (a clock nvidia-smi
// does not explain); a power cap the whole job shares is not.
TEST(GpuTelemetrySeries, AClockUnderThePeersWithoutAReasonIsTheCause) {
  auto own = node(4, [](int) { return gpu(2, 1400, {"SW Power Cap"}); });
  auto ev = telemetry_evidence("node-3", own, {node(4)}, 1000);
  EXPECT_EQ(ev.cause, "GPU 2, SM clock 1400/1980 MHz");
  auto shared_cap = [](int) { return gpu(2, 1900, {"SW Power Cap"}); };
  EXPECT_EQ(telemetry_evidence("node-3", node(4, shared_cap), {node(4)}, 1000).cause, "");
}

// A node of 4 GPUs each running `per_gpu` compute processes, `on_2` on GPU 2.
std::vector<TelemetrySample> with_processes(int samples, double per_gpu, double on_2) {
  auto out = node(samples);
  for (auto& s : out)
    for (auto& g : s.gpus) g.processes = g.gpu == 2 ? on_2 : per_gpu;
  return out;
}

// Another process on a GPU (a stray from an earlier job, a user's tool) slows the rank there
// with clocks and power that read like its own load: more compute processes than the job's
// other GPUs run is the cause. A job that runs two a GPU everywhere is not; nor is a count the
// peers' node-checks cannot see (0 everywhere: a container hides the job's own processes).
TEST(GpuTelemetrySeries, AGpuSharedWithAnotherProcessIsTheCause) {
  auto ev = telemetry_evidence("node-3", with_processes(4, 1, 2), {with_processes(4, 1, 1)}, 1000);
  EXPECT_EQ(ev.cause, "GPU 2, SM clock 1980/1980 MHz, 2 compute processes");
  EXPECT_TRUE(one_line_saying(ev,
                              "2 compute processes on it, the job's other nodes' GPUs 1: another "
                              "process competes for it"));
  EXPECT_EQ(
      telemetry_evidence("node-3", with_processes(4, 2, 2), {with_processes(4, 2, 2)}, 1000).cause,
      "");
  EXPECT_EQ(
      telemetry_evidence("node-3", with_processes(4, 0, 1), {with_processes(4, 0, 0)}, 1000).cause,
      "");
  // Once in four samples (a tool that ran a moment) is not most of the window.
  auto once = with_processes(4, 1, 1);
  once[1].gpus[2].processes = 2;
  EXPECT_EQ(telemetry_evidence("node-3", once, {with_processes(4, 1, 1)}, 1000).cause, "");
  // A GPU held back by its hardware still heads the cause before a shared one.
  auto both = with_processes(4, 1, 2);
  for (auto& s : both) s.gpus[1] = gpu(1, 1095, {"HW Slowdown"});
  EXPECT_EQ(telemetry_evidence("node-3", both, {with_processes(4, 1, 1)}, 1000).cause,
            "GPU 1 HW Slowdown, SM clock 1095/1980 MHz");
}

// A node of 4 GPUs sampled every minute from t=1000 whose GPU 2 spent `share` of each minute
// under HW Thermal Slowdown by its counters, and the others `others` of it.
std::vector<TelemetrySample> counted(int samples, double share, double others = 0) {
  auto out = node(samples);
  for (std::size_t i = 0; i < out.size(); ++i)
    for (auto& g : out[i].gpus) {
      g.hw_thermal_us = 5e9 + 60e6 * static_cast<double>(i) * (g.gpu == 2 ? share : others);
      g.sw_power_cap_us = 1e9 + 60e6 * static_cast<double>(i);  // capped all the time: policy
    }
  return out;
}

// Throttled 40 % of the time, it shows the reason in only one sample of five: the counters
// say how long it held the clocks. A reason the whole job shares (a hot room) is no cause of
// one node's slowness; the power cap never is.
TEST(GpuTelemetrySeries, AReasonItsCountersHeldMuchOfTheWindowIsTheCause) {
  auto own = counted(5, 0.4);
  own[2].gpus[2] = [&] {
    auto t = gpu(2, 1600, {"HW Thermal Slowdown"});
    t.hw_thermal_us = own[2].gpus[2].hw_thermal_us;
    return t;
  }();
  auto ev = telemetry_evidence("node-3", own, {counted(5, 0), counted(5, 0)}, 1000);
  EXPECT_EQ(ev.cause, "GPU 2 HW Thermal Slowdown 40% of the time, SM clock 1980/1980 MHz");
  EXPECT_TRUE(one_line_saying(ev,
                              "HW Thermal Slowdown 40% of the time by its counters, the job's "
                              "other nodes' GPUs 0%"));
  EXPECT_EQ(ev.lines[0].find("held back in"), std::string::npos) << "1 of 5 is not most";
  // Without the one sample that caught it, the counters alone name it.
  EXPECT_EQ(telemetry_evidence("node-3", counted(5, 0.4), {counted(5, 0)}, 1000).cause,
            "GPU 2 HW Thermal Slowdown 40% of the time, SM clock 1980/1980 MHz");
  EXPECT_EQ(telemetry_evidence("node-3", counted(5, 0.4, 0.4), {counted(5, 0.4, 0.4)}, 1000).cause,
            "");
  EXPECT_EQ(telemetry_evidence("node-3", counted(5, 0.1), {counted(5, 0)}, 1000).cause, "");
  // Counted from the last sample before the window: two samples, the first before it.
  EXPECT_EQ(telemetry_evidence("node-3", counted(2, 0.5), {counted(2, 0)}, 1030).cause,
            "GPU 2 HW Thermal Slowdown 50% of the time, SM clock 1980/1980 MHz");
  // A counter that went back (the driver reloaded) says nothing.
  auto reset = counted(3, 0.5);
  reset[2].gpus[2].hw_thermal_us = 0;
  EXPECT_EQ(telemetry_evidence("node-3", reset, {counted(3, 0)}, 1000).cause, "");
}

// The real H200 under load, 10.04 s apart: its SW Power Cap counter ran all that time
// (10,100,040 us), and no reason of its own: no cause.
TEST(GpuTelemetrySeries, RealH200CountersUnderLoadShowOnlyThePowerCap) {
  auto read = [](const char* name) {
    return gpu_telemetry(parse_nvidia_smi_csv(testing::read_file(testing::fixture(
                                                  std::string("gpu/h200-580.159.04/") + name)))
                             .gpus);
  };
  std::vector<TelemetrySample> own = {{1795709674.852, read("counters-load-1.csv")},
                                      {1795709684.891, read("counters-load-2.csv")}};
  ASSERT_EQ(own[1].gpus.size(), 1u);
  EXPECT_EQ(own[1].gpus[0].sw_power_cap_us, 15848702.0);
  EXPECT_EQ(own[1].gpus[0].hw_thermal_us, 0.0);
  EXPECT_NEAR((*own[1].gpus[0].sw_power_cap_us - *own[0].gpus[0].sw_power_cap_us) / 1e6 /
                  (own[1].ts - own[0].ts),
              1.0, 0.01);
  EXPECT_EQ(telemetry_evidence("node-3", own, {own}, own[0].ts).cause, "");
}

TEST(GpuTelemetrySeries, ANarrowedLinkIsTheCause) {
  auto own = node(2, [](int) {
    auto t = gpu(2, 1980);
    t.pcie_width = 8;
    t.pcie_width_max = 16;
    return t;
  });
  auto ev = telemetry_evidence("node-3", own, {node(2)}, 1000);
  EXPECT_EQ(ev.cause, "GPU 2, SM clock 1980/1980 MHz, PCIe x8 of x16");
}

// Checked less often than the window is long: the latest sample speaks. Never checked: said so.
TEST(GpuTelemetrySeries, OldOrMissingTelemetry) {
  auto own = node(1, [](int) { return gpu(2, 1095, {"HW Slowdown"}); });
  EXPECT_EQ(telemetry_evidence("node-3", own, std::vector<TelemetrySeries>{}, 5000).cause,
            "GPU 2 HW Slowdown, SM clock 1095/1980 MHz");
  auto none = telemetry_evidence("node-3", {}, {node(3)}, 1000);
  EXPECT_EQ(none.cause, "");
  ASSERT_EQ(none.lines.size(), 1u);
  EXPECT_NE(none.lines[0].find("no GPU telemetry"), std::string::npos);
}

// A real GPU's two samples of one moment (bench/gpu_capture.sh): its --query-gpu answer and
// its -q report, a minute apart in the series.
std::vector<TelemetrySample> real_samples(const std::string& machine, const std::string& moment) {
  auto read = [&](const std::string& name) {
    return testing::read_file(testing::fixture("gpu/" + machine + "/" + name));
  };
  return {{1000, gpu_telemetry(parse_nvidia_smi_csv(read("query-" + moment + ".csv")).gpus)},
          {1060, gpu_telemetry(parse_nvidia_smi_q(read("q-" + moment + ".txt")).gpus)}};
}

// Under a real load every GPU sits at its power cap, and its clock wanders from sample to sample
// (1455-1560 MHz on the H200, 1350-1530 on the H100): within 0.9x of the peers', so a shared
// cap is never the cause. A node whose CPU is contended runs its GPU less busy and faster: the
// finding says the slowness is not in its GPUs (that run put 4 ranks on one GPU; a real job runs
// one a GPU, as set here).
TEST(GpuTelemetrySeries, RealSamplesUnderLoadShowNoGpuCauseUnlessShared) {
  for (const auto& [machine, contended] :
       {std::pair{"h200-580.159.04", "GPU 0, SM clock 1538/1980 MHz, 2 compute processes"},
        std::pair{"h100-580.159.04", "GPU 0, SM clock 1530/1980 MHz, 2 compute processes"}}) {
    SCOPED_TRACE(machine);
    std::vector<std::vector<TelemetrySample>> peers = {real_samples(machine, "alone"),
                                                       real_samples(machine, "alone")};
    for (const char* moment : {"alone", "cpu-starved"}) {
      SCOPED_TRACE(moment);
      auto own = real_samples(machine, moment);
      ASSERT_EQ(own.size(), 2u);
      ASSERT_EQ(own[0].gpus.size(), 1u);
      for (auto& s : own)
        for (auto& g : s.gpus)
          if (g.processes) g.processes = 1;
      auto ev = telemetry_evidence("node-3", own, peers, 1000);
      EXPECT_EQ(ev.cause, "");
      EXPECT_TRUE(one_line_saying(ev, "the slowness is not in its GPUs"));
    }
    // A second process on the GPU doubled the trainer's step; only its process count shows it.
    EXPECT_EQ(telemetry_evidence("node-3", real_samples(machine, "contended"), peers, 1000).cause,
              contended);
  }
}

}  // namespace
}  // namespace llmwatch
