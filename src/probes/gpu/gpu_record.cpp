#include "probes/gpu/gpu_record.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <regex>

#include "util/regex_window.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "memory.total [MiB]" → "memory.total".
std::string field_name(std::string_view header) {
  std::string h(trim(header));
  if (auto b = h.find(" ["); b != std::string::npos) h.resize(b);
  return h;
}

}  // namespace

std::optional<std::string> GpuRecord::text(const std::string& field) const {
  auto it = fields.find(field);
  if (it == fields.end()) return std::nullopt;
  std::string v(trim(it->second));
  std::string l = lower(v);
  // nvidia-smi's ways of saying "no value": [N/A], [Not Supported], [Unknown Error],
  // [Requested functionality has been deprecated], and MIG's bare N/A.
  if (v.empty() || l == "n/a" || (v.front() == '[' && v.back() == ']')) return std::nullopt;
  return v;
}

std::optional<double> GpuRecord::number(const std::string& field) const {
  auto v = text(field);
  if (!v) return std::nullopt;
  const char* s = v->c_str();
  char* end = nullptr;
  double d = (v->size() > 2 && v->compare(0, 2, "0x") == 0)
                 ? static_cast<double>(std::strtoull(s, &end, 16))
                 : std::strtod(s, &end);
  if (end == s) return std::nullopt;
  return d;
}

std::optional<int> GpuRecord::gpu_index(const std::string& field) const {
  auto n = number(field);
  if (!n || !(*n >= 0 && *n <= 65535)) return std::nullopt;  // also NaN and inf
  return static_cast<int>(*n);
}

std::optional<bool> GpuRecord::flag(const std::string& field) const {
  auto v = text(field);
  if (!v) return std::nullopt;
  std::string l = lower(*v);
  if (l == "yes" || l == "active" || l == "enabled" || l == "true") return true;
  if (l == "no" || l == "not active" || l == "disabled" || l == "false") return false;
  return std::nullopt;
}

std::string GpuRecord::bus_id() const {
  auto it = fields.find("pci.bus_id");
  return it == fields.end() ? "" : normalize_bus_id(it->second);
}

std::string normalize_bus_id(const std::string& bus_id) {
  std::string s = lower(std::string(trim(bus_id)));
  if (starts_with(s, "pci:")) s = s.substr(4);
  if (auto dot = s.rfind('.'); dot != std::string::npos) s.resize(dot);  // function
  auto parts = split(s, ':');
  if (parts.size() != 3) return s;
  // Domain "00000000" (nvidia-smi) and "0000" (kernel) are the same: keep its last 4 digits.
  std::string domain = parts[0].size() > 4 ? parts[0].substr(parts[0].size() - 4) : parts[0];
  return domain + ":" + parts[1] + ":" + parts[2];
}

GpuParse parse_nvidia_smi_csv(const std::string& text) {
  GpuParse out;
  std::vector<std::string> header;
  int line_no = 0;
  for (const auto& raw : split(text, '\n')) {
    ++line_no;
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    auto cells = split(line, ',');
    if (header.empty()) {
      for (const auto& c : cells) header.push_back(field_name(c));
      if (std::find(header.begin(), header.end(), "index") == header.end() &&
          std::find(header.begin(), header.end(), "pci.bus_id") == header.end()) {
        out.error = "line 1: no CSV header naming index or pci.bus_id (use --format=csv)";
        return out;
      }
      continue;
    }
    if (cells.size() != header.size()) {
      out.error = "line " + std::to_string(line_no) + ": " + std::to_string(cells.size()) +
                  " values for " + std::to_string(header.size()) + " fields";
      return out;
    }
    GpuRecord g;
    for (size_t i = 0; i < cells.size(); ++i) g.fields[header[i]] = std::string(trim(cells[i]));
    g.index = g.gpu_index("index").value_or(static_cast<int>(out.gpus.size()));
    out.gpus.push_back(std::move(g));
  }
  if (header.empty()) out.error = "empty output";
  return out;
}

GpuParse parse_nvidia_smi_q(const std::string& text) {
  // Section paths of the indented report that the rules need, by --query-gpu name.
  static const std::map<std::string, std::string> wanted = {
      {"Retired Pages/Single Bit ECC", "retired_pages.single_bit_ecc.count"},
      {"Retired Pages/Double Bit ECC", "retired_pages.double_bit.count"},
      {"Retired Pages/Pending Page Blacklist", "retired_pages.pending"},
      {"Retired Pages/Pending", "retired_pages.pending"},
      {"Remapped Rows/Correctable Error", "remapped_rows.correctable"},
      {"Remapped Rows/Uncorrectable Error", "remapped_rows.uncorrectable"},
      {"Remapped Rows/Pending", "remapped_rows.pending"},
      {"Remapped Rows/Remapping Failure Occurred", "remapped_rows.failure"},
      {"Product Name", "name"},
      {"GPU UUID", "uuid"},
      {"Minor Number", "index"},
      {"GPU Recovery Action", "gpu_recovery_action"},
      {"Temperature/GPU Current Temp", "temperature.gpu"},
      // ECC counters, in both layouts: Ampere/Hopper ("DRAM Uncorrectable") and older GPUs
      // ("Double Bit / Total"). Only the volatile ones (since the last reset) decide a reset.
      {"ECC Errors/Volatile/DRAM Uncorrectable", "ecc.errors.uncorrected.volatile.dram"},
      {"ECC Errors/Volatile/DRAM Correctable", "ecc.errors.corrected.volatile.dram"},
      {"ECC Errors/Volatile/SRAM Uncorrectable", "ecc.errors.uncorrected.volatile.sram"},
      {"ECC Errors/Volatile/SRAM Uncorrectable SEC-DED", "ecc.errors.uncorrected.volatile.sram"},
      {"ECC Errors/Volatile/Double Bit/Total", "ecc.errors.uncorrected.volatile.total"},
      {"ECC Errors/Volatile/Single Bit/Total", "ecc.errors.corrected.volatile.total"},
      {"ECC Errors/Aggregate/DRAM Uncorrectable", "ecc.errors.uncorrected.aggregate.dram"},
      {"ECC Errors/Aggregate/Double Bit/Total", "ecc.errors.uncorrected.aggregate.total"},
      // Telemetry under load (probes/gpu/gpu_telemetry.h), in the layouts of drivers 450-590:
      // "Clocks Throttle Reasons" became "Clocks Event Reasons" (535), "Power Readings" became
      // "GPU Power Readings" with an average and a current limit (535+).
      {"Clocks/SM", "clocks.current.sm"},
      {"Max Clocks/SM", "clocks.max.sm"},
      {"Utilization/GPU", "utilization.gpu"},
      {"Utilization/Gpu", "utilization.gpu"},
      {"GPU Power Readings/Average Power Draw", "power.draw"},
      {"GPU Power Readings/Power Draw", "power.draw"},
      {"Power Readings/Power Draw", "power.draw"},
      {"GPU Power Readings/Current Power Limit", "enforced.power.limit"},
      {"Power Readings/Enforced Power Limit", "enforced.power.limit"},
      {"PCI/GPU Link Info/PCIe Generation/Current", "pcie.link.gen.current"},
      {"PCI/GPU Link Info/PCIe Generation/Max", "pcie.link.gen.max"},
      {"PCI/GPU Link Info/Link Width/Current", "pcie.link.width.current"},
      {"PCI/GPU Link Info/Link Width/Max", "pcie.link.width.max"},
      // Microseconds under each reason since the driver loaded (--query-gpu's
      // clocks_event_reasons_counters.*), as drivers 535+ print them.
      {"Clocks Event Reasons Counters/SW Power Capping",
       "clocks_event_reasons_counters.sw_power_cap"},
      {"Clocks Event Reasons Counters/SW Thermal Slowdown",
       "clocks_event_reasons_counters.sw_thermal_slowdown"},
      {"Clocks Event Reasons Counters/HW Thermal Slowdown",
       "clocks_event_reasons_counters.hw_thermal_slowdown"},
      {"Clocks Event Reasons Counters/HW Power Braking",
       "clocks_event_reasons_counters.hw_power_brake_slowdown"},
  };
  static const std::map<std::string, std::string> reasons = {
      {"SW Power Cap", "clocks_event_reasons.sw_power_cap"},
      {"HW Slowdown", "clocks_event_reasons.hw_slowdown"},
      {"HW Thermal Slowdown", "clocks_event_reasons.hw_thermal_slowdown"},
      {"HW Power Brake Slowdown", "clocks_event_reasons.hw_power_brake_slowdown"},
      {"SW Thermal Slowdown", "clocks_event_reasons.sw_thermal_slowdown"},
      {"Sync Boost", "clocks_event_reasons.sync_boost"},
  };
  GpuParse out;
  std::vector<std::pair<size_t, std::string>> stack;  // (indent, section name)
  GpuRecord* gpu = nullptr;
  for (const auto& raw : split(text, '\n')) {
    if (trim(raw).empty()) continue;
    size_t indent = raw.find_first_not_of(' ');
    std::string_view line = trim(raw);
    if (indent == 0 && starts_with(line, "GPU ")) {
      out.gpus.emplace_back();
      gpu = &out.gpus.back();
      gpu->index = static_cast<int>(out.gpus.size()) - 1;
      gpu->fields["pci.bus_id"] = std::string(trim(line.substr(4)));
      stack.clear();
      continue;
    }
    if (!gpu || indent == 0) continue;
    while (!stack.empty() && stack.back().first >= indent) stack.pop_back();
    auto colon = line.find(" : ");
    std::string key(trim(line.substr(0, colon == std::string_view::npos ? line.size() : colon)));
    if (colon == std::string_view::npos) {
      // "Processes" with entries under it: counted below ("Processes : None" when there are none).
      if (stack.empty() && key == "Processes") gpu->fields[kComputeProcesses] = "0";
      stack.emplace_back(indent, key);
      continue;
    }
    std::string path;
    for (const auto& [_, name] : stack) path += name + "/";
    path += key;
    std::string value(trim(line.substr(colon + 3)));
    if (auto it = wanted.find(path); it != wanted.end()) {
      gpu->fields[it->second] = value;
    } else if (path == "Processes") {
      gpu->fields[kComputeProcesses] = value == "None" ? "0" : value;
    } else if (path == "Processes/Type") {
      // C (compute) or C+G; a G (graphics) process is not one --query-compute-apps lists.
      if (value.find('C') != std::string::npos) {
        auto& n = gpu->fields[kComputeProcesses];
        long long count = 0;  // what "Processes : <value>" said, if a number; else from 0
        std::from_chars(n.data(), n.data() + n.size(), count);
        n = std::to_string(std::clamp(count, 0LL, 1LL << 20) + 1);
      }
    } else if (!stack.empty() && (stack.front().second == "Clocks Event Reasons" ||
                                  stack.front().second == "Clocks Throttle Reasons")) {
      // HW Thermal Slowdown sits under HW Slowdown: the reason's own name is the key.
      if (auto r = reasons.find(key); r != reasons.end()) gpu->fields[r->second] = value;
    }
  }
  // Minor numbers are the device index when the report gives them.
  for (auto& g : out.gpus)
    if (auto n = g.gpu_index("index")) g.index = *n;
  if (out.gpus.empty()) out.error = "no \"GPU <bus id>\" section found";
  return out;
}

GpuParse parse_nvidia_smi_xml(const std::string& text) {
  static const std::map<std::string, std::string> wanted = {
      {"minor_number", "index"},
      {"product_name", "name"},
      {"uuid", "uuid"},
      {"retired_pages/multiple_single_bit_retirement/retired_count",
       "retired_pages.single_bit_ecc.count"},
      {"retired_pages/double_bit_retirement/retired_count", "retired_pages.double_bit.count"},
      {"retired_pages/pending_blacklist", "retired_pages.pending"},
      {"retired_pages/pending_retirement", "retired_pages.pending"},
      {"remapped_rows/remapped_row_corr", "remapped_rows.correctable"},
      {"remapped_rows/remapped_row_unc", "remapped_rows.uncorrectable"},
      {"remapped_rows/remapped_row_pending", "remapped_rows.pending"},
      {"remapped_rows/remapped_row_failure", "remapped_rows.failure"},
      {"ecc_errors/volatile/dram_uncorrectable", "ecc.errors.uncorrected.volatile.dram"},
      {"ecc_errors/volatile/sram_uncorrectable", "ecc.errors.uncorrected.volatile.sram"},
      {"pci/pci_gpu_link_info/link_widths/max_link_width", "pcie.link.width.max"},
      {"pci/pci_gpu_link_info/link_widths/current_link_width", "pcie.link.width.current"},
      {"gpu_recovery_action", "gpu_recovery_action"},
      {"temperature/gpu_temp", "temperature.gpu"},
  };
  GpuParse out;
  // Every tag must close within regex_window: the walker below is a std::regex, and an
  // unclosed or enormous tag would overflow its recursion.
  for (size_t open = text.find('<'), close = 0; open != std::string::npos;
       open = text.find('<', open + 1)) {
    if (close <= open) close = text.find('>', open);
    if (close == std::string::npos || close - open > kRegexWindow)
      return out.error = "a tag does not close within " + std::to_string(kRegexWindow) + " bytes",
             out;
  }
  // A small tag walker: nvidia-smi's XML has no mixed content or CDATA worth keeping.
  static const std::regex tag(R"(<(/?)([A-Za-z_][\w.-]*)([^>]*?)(/?)>)");
  std::vector<std::string> path;  // below <gpu>
  bool in_gpu = false;
  size_t value_start = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), tag); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    bool closing = m[1].length() > 0, self_closing = m[4].length() > 0;
    std::string name = m[2];
    if (!closing && name == "gpu") {
      out.gpus.emplace_back();
      out.gpus.back().index = static_cast<int>(out.gpus.size()) - 1;
      std::smatch id;
      std::string attrs = m[3];
      if (std::regex_search(attrs, id, std::regex(R"(id=\"([^\"]*)\")")))
        out.gpus.back().fields["pci.bus_id"] = id[1];
      in_gpu = true;
      path.clear();
      continue;
    }
    if (!in_gpu) continue;
    if (closing && name == "gpu") {
      in_gpu = false;
      continue;
    }
    if (self_closing) continue;
    if (!closing) {
      path.push_back(name);
      value_start = static_cast<size_t>(m.position(0) + m.length(0));
      continue;
    }
    if (path.empty() || path.back() != name) {
      out.error = "mismatched </" + name + ">";
      return out;
    }
    std::string joined;
    for (const auto& p : path) joined += (joined.empty() ? "" : "/") + p;
    if (auto w = wanted.find(joined); w != wanted.end()) {
      std::string value(
          trim(std::string_view(text).substr(value_start, m.position(0) - value_start)));
      out.gpus.back().fields[w->second] = value;
    } else if (name == "remapped_rows" || name == "retired_pages") {
      // Under MIG: <remapped_rows>N/A</remapped_rows> — the counters are simply not known.
    }
    path.pop_back();
  }
  for (auto& g : out.gpus)
    if (auto n = g.gpu_index("index")) g.index = *n;
  if (out.gpus.empty()) out.error = "no <gpu> element found";
  return out;
}

bool set_compute_processes(GpuParse& gpus, const std::string& apps) {
  std::map<std::string, int> per_bus;
  for (const auto& g : gpus.gpus) per_bus[g.bus_id()] = 0;
  for (const auto& raw : split(apps, '\n')) {
    std::string_view line = trim(raw);
    if (line.empty() || line.find("No running") != std::string_view::npos) continue;
    auto comma = line.find(',');
    if (comma == std::string_view::npos) return false;
    auto bus = per_bus.find(normalize_bus_id(std::string(line.substr(comma + 1))));
    if (bus == per_bus.end()) return false;  // a GPU the query did not list: cannot place it
    ++bus->second;
  }
  for (auto& g : gpus.gpus) g.fields[kComputeProcesses] = std::to_string(per_bus[g.bus_id()]);
  return true;
}

// "GPU N: name (UUID: ...)" opens a GPU; "Link N: 26.562 GB/s" or "Link N: <inactive>" follow.
// Read by hand, not by regex: a link line can be as long as the tool cares to print.
std::vector<NvlinkGpu> parse_nvlink_status(const std::string& text) {
  auto leading_number = [](std::string_view s) -> std::optional<std::int64_t> {
    auto colon = s.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 6) return std::nullopt;
    return to_int64(s.substr(0, colon));
  };
  std::vector<NvlinkGpu> out;
  for (const auto& raw : split(text, '\n')) {
    std::string_view line = trim(raw);
    if (starts_with(line, "GPU ")) {
      if (auto index = leading_number(line.substr(4))) {
        out.push_back({});
        out.back().index = *index >= 0 && *index <= 65535 ? static_cast<int>(*index) : -1;
        continue;
      }
    }
    if (out.empty()) continue;
    auto& g = out.back();
    if (line.find("all links are inactive") != std::string_view::npos) {
      g.all_inactive = true;
      g.evidence.push_back(sanitize_line(line));
    } else if (starts_with(line, "Link ") && leading_number(line.substr(5))) {
      ++g.links;
      if (lower(std::string(line.substr(line.find(':') + 1))).find("inactive") !=
          std::string::npos) {
        ++g.inactive;
        g.evidence.push_back(sanitize_line(line));
      }
    }
  }
  return out;
}

}  // namespace llmwatch
