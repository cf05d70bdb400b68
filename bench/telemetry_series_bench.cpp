// What keeping a node's GPU telemetry series costs a cycle: every node whose node-check
// reported has its series looked at (is the report new?) and, when it is, a sample added. At
// 16,384 nodes that is 16,384 looks a cycle. A series of 16 samples of 8 GPUs under load, as the
// real H200 reports them (clock-event counters, compute processes).
//
//   llmwatch_telemetry_series_bench   (prints one table)
#include <chrono>
#include <cstdio>

#include "rules/gpu_telemetry_series.h"

using namespace llmwatch;

namespace {

TelemetrySample sample(double ts) {
  TelemetrySample s{ts, {}};
  for (int g = 0; g < 8; ++g) {
    GpuTelemetry t;
    t.gpu = g;
    t.sm_mhz = 1530;
    t.sm_max_mhz = 1980;
    t.power_w = 688.98;
    t.power_limit_w = 700;
    t.temp_c = 61;
    t.util_pct = 100;
    t.pcie_gen = t.pcie_gen_max = 5;
    t.pcie_width = t.pcie_width_max = 16;
    t.reasons = {"SW Power Cap"};
    t.processes = 1;
    t.sw_thermal_us = t.hw_thermal_us = t.hw_power_brake_us = 0;
    s.gpus.push_back(t);
  }
  return s;
}

template <typename F>
double micros_each(int n, F f) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f(i);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

}  // namespace

int main() {
  std::string series;
  for (int i = 0; i < 16; ++i) series = *append_telemetry_sample(series, sample(1000.0 + 60 * i));
  const int n = 2000;
  int skipped = 0;
  double look =
      micros_each(n, [&](int) { skipped += !append_telemetry_sample(series, sample(1000)); });
  double add = micros_each(n, [&](int i) { append_telemetry_sample(series, sample(5000.0 + i)); });
  double read = micros_each(n, [&](int) { read_telemetry_series(series); });
  std::printf("| telemetry series (16 samples x 8 GPUs, %zu bytes) | us each | at 16,384 nodes |\n",
              series.size());
  std::printf("|---|---|---|\n");
  std::printf("| a report already kept (%d of %d) | %.1f | %.0f ms |\n", skipped, n, look,
              look * 16384 / 1000);
  std::printf("| a new sample added | %.1f | %.0f ms |\n", add, add * 16384 / 1000);
  std::printf("| the series read whole (a slow node's evidence) | %.1f | |\n", read);
}
