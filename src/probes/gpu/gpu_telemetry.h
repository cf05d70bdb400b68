#pragma once
// What a GPU is doing under load, from one nvidia-smi answer (#28): its SM clock against the
// maximum, its power against the limit, its temperature and use, the clock-event (throttle)
// reasons that are active, and its PCIe link against the link's maximum. These are
// observations, not verdicts: a slow node's finding cites them, and a GPU held back by its own
// hardware (HW Slowdown, thermal, power brake) tells the node from the job.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probes/gpu/gpu_record.h"

namespace llmwatch {

struct GpuTelemetry {
  int gpu = -1;
  std::optional<double> sm_mhz, sm_max_mhz, power_w, power_limit_w, temp_c, util_pct;
  std::optional<double> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  // Compute processes on it (kComputeProcesses): more than the job's other GPUs run means
  // another process competes for it, which its clocks and power do not show.
  std::optional<double> processes;
  // Microseconds each reason has held the clocks down since the driver loaded: two samples give
  // the share of the time between them (a GPU throttled now and then, not only at a sample).
  // The power cap's is read but not kept in a node's series (telemetry_to_json).
  std::optional<double> sw_power_cap_us, sw_thermal_us, hw_thermal_us, hw_power_brake_us;
  // The active clock-event reasons by nvidia-smi's names ("HW Slowdown", "SW Power Cap", ...),
  // in a fixed order; "Idle" and "Applications Clocks Setting" are not reasons a run is slow.
  std::vector<std::string> reasons;

  // A reason that is the GPU's own hardware holding it back, not the work it is given or a
  // policy the site set: HW Slowdown, HW Thermal/Power Brake Slowdown, SW Thermal Slowdown.
  bool held_back() const;
  // Its SM clock over its maximum, when both are known.
  std::optional<double> clock_ratio() const;
  bool operator==(const GpuTelemetry&) const = default;
};

// From one GPU's record (any of nvidia-smi's output forms: the fields are --query-gpu names).
GpuTelemetry gpu_telemetry(const GpuRecord& g);
std::vector<GpuTelemetry> gpu_telemetry(const std::vector<GpuRecord>& gpus);

// Another tool's figures for the same GPUs (dcgmi dmon beside nvidia-smi): each figure `into`
// does not know is taken from `from`, each reason it does not name is added, and a GPU only
// `from` lists is added whole.
void fill_telemetry(std::vector<GpuTelemetry>& into, const std::vector<GpuTelemetry>& from);

// "GPU 2: HW Slowdown; SM clock 1095/1980 MHz, 312/700 W, 84 °C, 100% busy, PCIe gen5 x8 of x16":
// what is known, as a person reads it (and "2 compute processes" where more than one runs).
std::string describe(const GpuTelemetry& t);

// As node reports carry it: one object per GPU, unknown figures left out. Reading never throws:
// an entry that is not an object is skipped, a figure that is not a number is not known.
nlohmann::json telemetry_to_json(const std::vector<GpuTelemetry>& gpus);
std::string telemetry_json_text(const std::vector<GpuTelemetry>& gpus);  // the same, as text
std::vector<GpuTelemetry> telemetry_from_json(const nlohmann::json& j);

}  // namespace llmwatch
