#include "probes/gpu/gpu_telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

#include "util/json_writer.h"
#include "util/strings.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// nvidia-smi's field and the name it prints in -q, for the reasons that can slow a run.
const std::pair<const char*, const char*> kReasons[] = {
    {"clocks_event_reasons.hw_slowdown", "HW Slowdown"},
    {"clocks_event_reasons.hw_thermal_slowdown", "HW Thermal Slowdown"},
    {"clocks_event_reasons.hw_power_brake_slowdown", "HW Power Brake Slowdown"},
    {"clocks_event_reasons.sw_thermal_slowdown", "SW Thermal Slowdown"},
    {"clocks_event_reasons.sw_power_cap", "SW Power Cap"},
    {"clocks_event_reasons.sync_boost", "Sync Boost"},
};

// The figures by their JSON names, so that writing and reading cannot disagree.
using Figure = std::optional<double> GpuTelemetry::*;
const std::pair<const char*, Figure> kFigures[] = {
    {"sm_mhz", &GpuTelemetry::sm_mhz},         {"sm_max_mhz", &GpuTelemetry::sm_max_mhz},
    {"power_w", &GpuTelemetry::power_w},       {"power_limit_w", &GpuTelemetry::power_limit_w},
    {"temp_c", &GpuTelemetry::temp_c},         {"util_pct", &GpuTelemetry::util_pct},
    {"pcie_gen", &GpuTelemetry::pcie_gen},     {"pcie_gen_max", &GpuTelemetry::pcie_gen_max},
    {"pcie_width", &GpuTelemetry::pcie_width}, {"pcie_width_max", &GpuTelemetry::pcie_width_max},
    {"processes", &GpuTelemetry::processes},
};
// The counters a node's series keeps: those of the GPU's own reasons. Not sw_power_cap_us (the
// site's policy is never a node's cause). Every node keeps 16 samples of every GPU, and on a
// healthy GPU these are 0: when all three are known, "counted": 1 says so and only those not 0
// are written (128 GPU samples a node: 31 KB, not 38).
const std::pair<const char*, Figure> kCounters[] = {
    {"sw_thermal_us", &GpuTelemetry::sw_thermal_us},
    {"hw_thermal_us", &GpuTelemetry::hw_thermal_us},
    {"hw_power_brake_us", &GpuTelemetry::hw_power_brake_us},
};

}  // namespace

bool GpuTelemetry::held_back() const {
  for (const auto& r : reasons)
    if (r != "SW Power Cap" && r != "Sync Boost") return true;
  return false;
}

std::optional<double> GpuTelemetry::clock_ratio() const {
  if (!sm_mhz || !sm_max_mhz || *sm_max_mhz <= 0 || *sm_mhz < 0) return std::nullopt;
  return *sm_mhz / *sm_max_mhz;
}

GpuTelemetry gpu_telemetry(const GpuRecord& g) {
  GpuTelemetry t;
  t.gpu = g.index;
  // A value that is not a finite, non-negative number is not known (a fuzzed or broken answer
  // must not become "0 MHz").
  auto known = [&](const char* field) -> std::optional<double> {
    auto v = g.number(field);
    return v && std::isfinite(*v) && *v >= 0 ? v : std::nullopt;
  };
  t.sm_mhz = known("clocks.current.sm");
  t.sm_max_mhz = known("clocks.max.sm");
  t.power_w = known("power.draw");
  t.power_limit_w = known("enforced.power.limit");
  t.temp_c = known("temperature.gpu");
  t.util_pct = known("utilization.gpu");
  t.pcie_gen = known("pcie.link.gen.current");
  t.pcie_gen_max = known("pcie.link.gen.max");
  t.pcie_width = known("pcie.link.width.current");
  t.pcie_width_max = known("pcie.link.width.max");
  t.processes = known(kComputeProcesses);
  t.sw_power_cap_us = known("clocks_event_reasons_counters.sw_power_cap");
  t.sw_thermal_us = known("clocks_event_reasons_counters.sw_thermal_slowdown");
  t.hw_thermal_us = known("clocks_event_reasons_counters.hw_thermal_slowdown");
  t.hw_power_brake_us = known("clocks_event_reasons_counters.hw_power_brake_slowdown");
  for (const auto& [field, name] : kReasons)
    if (g.flag(field).value_or(false)) t.reasons.emplace_back(name);
  return t;
}

std::vector<GpuTelemetry> gpu_telemetry(const std::vector<GpuRecord>& gpus) {
  std::vector<GpuTelemetry> out;
  out.reserve(gpus.size());
  for (const auto& g : gpus) out.push_back(gpu_telemetry(g));
  return out;
}

void fill_telemetry(std::vector<GpuTelemetry>& into, const std::vector<GpuTelemetry>& from) {
  for (const auto& f : from) {
    auto same = std::find_if(into.begin(), into.end(),
                             [&](const GpuTelemetry& t) { return t.gpu == f.gpu; });
    if (same == into.end()) {
      into.push_back(f);
      continue;
    }
    for (const auto& [name, figure] : kFigures)
      if (!((*same).*figure)) (*same).*figure = f.*figure;
    for (const auto& r : f.reasons)
      if (std::find(same->reasons.begin(), same->reasons.end(), r) == same->reasons.end())
        same->reasons.push_back(r);
  }
}

std::string describe(const GpuTelemetry& t) {
  std::string s = "GPU " + std::to_string(t.gpu) + ": ";
  s += t.reasons.empty() ? "no clock-event reason" : join(t.reasons, ", ");
  std::vector<std::string> figures;
  if (t.sm_mhz)
    figures.push_back("SM clock " + format_whole(*t.sm_mhz) +
                      (t.sm_max_mhz ? "/" + format_whole(*t.sm_max_mhz) : "") + " MHz");
  if (t.power_w)
    figures.push_back(format_whole(*t.power_w) +
                      (t.power_limit_w ? "/" + format_whole(*t.power_limit_w) : "") + " W");
  if (t.temp_c) figures.push_back(format_whole(*t.temp_c) + " °C");
  if (t.util_pct) figures.push_back(format_whole(*t.util_pct) + "% busy");
  if (t.pcie_width && t.pcie_width_max && *t.pcie_width < *t.pcie_width_max)
    figures.push_back("PCIe x" + format_whole(*t.pcie_width) + " of x" +
                      format_whole(*t.pcie_width_max));
  if (t.pcie_gen && t.pcie_gen_max && *t.pcie_gen < *t.pcie_gen_max)
    figures.push_back("PCIe gen" + format_whole(*t.pcie_gen) + " of gen" +
                      format_whole(*t.pcie_gen_max));
  if (t.processes && *t.processes >= 2)
    figures.push_back(format_whole(*t.processes) + " compute processes");
  if (!figures.empty()) s += "; " + join(figures, ", ");
  return s;
}

namespace {
// Each field a GPU's telemetry is kept with, in order, to `put(name, value)`: every figure known;
// "counted" when every counter is known, and then a counter only when it is not zero (a healthy
// GPU's are all zero: kept as "counted" alone); the active reasons.
template <class Put>
void kept_fields(const GpuTelemetry& t, Put&& put) {
  put("gpu", static_cast<std::int64_t>(t.gpu));
  for (const auto& [name, figure] : kFigures)
    if (t.*figure) put(name, *(t.*figure));
  bool counted = true;
  for (const auto& [name, counter] : kCounters) counted = counted && (t.*counter).has_value();
  if (counted) put("counted", std::int64_t{1});
  for (const auto& [name, counter] : kCounters)
    if (t.*counter && (!counted || *(t.*counter) != 0)) put(name, *(t.*counter));
  if (!t.reasons.empty()) put("reasons", t.reasons);
}
}  // namespace

nlohmann::json telemetry_to_json(const std::vector<GpuTelemetry>& gpus) {
  auto out = nlohmann::json::array();
  for (const auto& t : gpus) {
    nlohmann::json g = nlohmann::json::object();
    kept_fields(t, [&](const char* name, const auto& v) { g[name] = v; });
    out.push_back(std::move(g));
  }
  return out;
}

// Written straight into text (util/json_writer.h): the store adds a sample of every node a
// watched task runs on at each of its node-checks, and building an nlohmann::json first was
// most of that cost (27 of 37 µs a sample of 8 GPUs).
std::string telemetry_json_text(const std::vector<GpuTelemetry>& gpus) {
  JsonWriter w;
  w.begin_array();
  for (const auto& t : gpus) {
    w.begin_object();
    kept_fields(t, [&](const char* name, const auto& v) {
      w.key(name);
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::vector<std::string>>) {
        w.begin_array();
        for (const auto& s : v) w.value(s);
        w.end_array();
      } else {
        w.value(v);
      }
    });
    w.end_object();
  }
  return w.end_array().take();
}

std::vector<GpuTelemetry> telemetry_from_json(const nlohmann::json& j) {
  std::vector<GpuTelemetry> out;
  if (!j.is_array()) return out;
  for (const auto& g : j) {
    if (!g.is_object()) continue;
    GpuTelemetry t;
    if (auto it = g.find("gpu"); it != g.end() && it->is_number_integer()) {
      auto n = it->get<std::int64_t>();
      if (n >= 0 && n <= 65535) t.gpu = static_cast<int>(n);
    }
    auto read = [&](const char* name, Figure figure) {
      if (auto it = g.find(name); it != g.end() && it->is_number()) {
        double v = it->get<double>();
        if (std::isfinite(v) && v >= 0) t.*figure = v;
      }
    };
    for (const auto& [name, figure] : kFigures) read(name, figure);
    const bool counted = g.contains("counted");
    for (const auto& [name, counter] : kCounters) {
      if (counted) t.*counter = 0.0;  // written only when not 0
      read(name, counter);
    }
    if (auto it = g.find("reasons"); it != g.end() && it->is_array())
      for (const auto& r : *it)
        if (r.is_string()) t.reasons.push_back(r.get<std::string>());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace llmwatch
