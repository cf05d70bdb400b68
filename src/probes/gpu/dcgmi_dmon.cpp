#include "probes/gpu/dcgmi_dmon.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

#include "util/strings.h"

namespace llmwatch {

const char* const kDcgmiDmonFields = "100,113,112,150,155,164,203,237,235,238,236";

namespace {

constexpr std::size_t kColumns = 11;  // the fields above

// The columns' figures, in kDcgmiDmonFields' order (the reasons, column 2, apart).
using Figure = std::optional<double> GpuTelemetry::*;
constexpr Figure kFigureAt[kColumns] = {
    &GpuTelemetry::sm_mhz,     &GpuTelemetry::sm_max_mhz,    nullptr,
    &GpuTelemetry::temp_c,     &GpuTelemetry::power_w,       &GpuTelemetry::power_limit_w,
    &GpuTelemetry::util_pct,   &GpuTelemetry::pcie_gen,      &GpuTelemetry::pcie_gen_max,
    &GpuTelemetry::pcie_width, &GpuTelemetry::pcie_width_max};
constexpr std::size_t kReasonsColumn = 2;

// DCGM's clock-event bits (DCGM_CLOCKS_EVENT_REASON_*) by nvidia-smi's names, in the order
// nvidia-smi's reasons are kept (probes/gpu/gpu_telemetry.cpp): the same GPU reads the same
// from either tool.
const std::pair<std::uint64_t, const char*> kReasonBits[] = {
    {0x08, "HW Slowdown"},         {0x40, "HW Thermal Slowdown"}, {0x80, "HW Power Brake Slowdown"},
    {0x20, "SW Thermal Slowdown"}, {0x04, "SW Power Cap"},        {0x10, "Sync Boost"},
};

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    auto at = line.find_first_not_of(" \t\r");
    if (at == std::string_view::npos) return out;
    line.remove_prefix(at);
    auto end = line.find_first_of(" \t\r");
    out.push_back(line.substr(0, end));
    if (end == std::string_view::npos) return out;
    line.remove_prefix(end);
  }
}

// A finite, non-negative number that is the whole word; nullopt for "N/A" and anything else.
std::optional<double> figure(std::string_view w) {
  double v = 0;
  auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  if (ec != std::errc() || end != w.data() + w.size() || !std::isfinite(v) || v < 0)
    return std::nullopt;
  return v;
}

}  // namespace

DmonParse parse_dcgmi_dmon(std::string_view text) {
  DmonParse out;
  bool header = false;
  for (auto line : split(text, '\n')) {
    auto w = words(line);
    if (w.empty()) continue;
    if (w[0] == "#Entity") {
      // Printed again every 14 samples; each time the same columns.
      if (w.size() != kColumns + 1) {
        out.error = "dcgmi dmon printed " + std::to_string(w.size() - 1) + " columns for the " +
                    std::to_string(kColumns) + " fields asked";
        out.gpus.clear();
        return out;
      }
      header = true;
      continue;
    }
    if (w[0] != "GPU" || w.size() < 2) continue;  // "ID" (units), GPU-I, GPU-CI, Switch
    if (!header) {
      out.error = "dcgmi dmon printed a GPU row before its header";
      return out;
    }
    int gpu = -1;
    auto [end, ec] = std::from_chars(w[1].data(), w[1].data() + w[1].size(), gpu);
    if (ec != std::errc() || end != w[1].data() + w[1].size() || gpu < 0 || gpu > 65535 ||
        w.size() != kColumns + 2) {
      out.error = "dcgmi dmon printed a row that is not a GPU and its " + std::to_string(kColumns) +
                  " values: '" + std::string(line.substr(0, 80)) + "'";
      out.gpus.clear();
      return out;
    }
    GpuTelemetry t;
    t.gpu = gpu;
    for (std::size_t c = 0; c < kColumns; ++c) {
      auto v = figure(w[c + 2]);
      if (c == kReasonsColumn) {
        // A bitmask: an integer, whole (a double's rounding would invent or lose a bit).
        std::uint64_t bits = 0;
        auto word = w[c + 2];
        auto [e, err] = std::from_chars(word.data(), word.data() + word.size(), bits);
        if (err == std::errc() && e == word.data() + word.size())
          for (const auto& [bit, name] : kReasonBits)
            if (bits & bit) t.reasons.emplace_back(name);
      } else {
        t.*kFigureAt[c] = v;
      }
    }
    // Each sample repeats the GPUs: the last one read is the newest.
    bool replaced = false;
    for (auto& g : out.gpus)
      if (g.gpu == gpu) {
        g = t;
        replaced = true;
      }
    if (!replaced) out.gpus.push_back(std::move(t));
  }
  if (!header) out.error = "no '#Entity' header: not dcgmi dmon's table";
  return out;
}

}  // namespace llmwatch
