#include "probes/perfdata.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace llmwatch {
namespace {

bool printable_label(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

}  // namespace

std::map<std::string, double> parse_perfdata(std::string_view text) {
  std::map<std::string, double> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i >= text.size()) break;
    // The label: quoted ('a label'='s quote doubled) or up to '='.
    std::string label;
    if (text[i] == '\'') {
      ++i;
      while (i < text.size()) {
        if (text[i] == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          label += '\'';
          i += 2;
        } else if (text[i] == '\'') {
          ++i;
          break;
        } else {
          label += text[i++];
        }
      }
    } else {
      while (i < text.size() && text[i] != '=' && text[i] != ' ' && text[i] != '\t')
        label += text[i++];
    }
    if (i >= text.size() || text[i] != '=') {
      while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;  // not a figure: skip
      continue;
    }
    ++i;
    std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    std::string value(text.substr(start, i - start));
    value = value.substr(0, value.find(';'));  // warn;crit;min;max follow
    const char* s = value.c_str();
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (end == s || !std::isfinite(v) || !printable_label(label)) continue;
    out[label] = v;
  }
  return out;
}

std::map<std::string, double> figures_from_json(const nlohmann::json& j) {
  std::map<std::string, double> out;
  if (!j.is_object()) return out;
  for (const auto& [label, v] : j.items())
    if (v.is_number() && std::isfinite(v.get<double>())) out[label] = v.get<double>();
  return out;
}

}  // namespace llmwatch
