#include "rules/fleet_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/robust_stats.h"
#include "util/text.h"

namespace llmwatch {
namespace {

std::string figure_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

nlohmann::json parsed_object(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace

std::optional<std::string> merge_node_figures(const std::string& text,
                                              const std::map<std::string, double>& figures,
                                              double ts) {
  auto j = parsed_object(text);
  bool changed = false;
  for (const auto& [name, value] : figures) {
    nlohmann::json entry = {value, ts};
    if (j.contains(name) && j[name] == entry) continue;
    j[name] = std::move(entry);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return json_dump(j);
}

std::map<std::string, FigureAt> read_node_figures_at(const std::string& text) {
  std::map<std::string, FigureAt> out;
  const auto j = parsed_object(text);  // alive for the loop: items() refers into it
  for (const auto& [name, entry] : j.items()) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_number() || !entry[1].is_number())
      continue;
    double value = entry[0].get<double>(), ts = entry[1].get<double>();
    if (std::isfinite(value)) out[name] = {value, ts};
  }
  return out;
}

std::map<std::string, double> read_node_figures(const std::string& text, double since) {
  std::map<std::string, double> out;
  for (const auto& [name, at] : read_node_figures_at(text))
    if (at.ts >= since) out[name] = at.value;
  return out;
}

std::vector<Finding> judge_fleet_figure(const FleetFigureSettings& s,
                                        const std::vector<NodeFigure>& fleet) {
  std::vector<Finding> out;
  if (fleet.size() < s.min_nodes) return out;
  std::vector<double> values;
  for (const auto& n : fleet) values.push_back(n.value);
  double m = median(values);
  if (!(m > 0)) return out;  // a figure that is not a positive rate cannot be a speed
  // Beyond the spread of the nodes that are not under the ratio (the slow ones would widen the
  // yardstick they are measured by), with a floor: identical nodes have a MAD of 0.
  std::vector<double> fast;
  for (double v : values)
    if (v >= s.below * m) fast.push_back(v);
  double spread = std::max(1.4826 * mad(fast, median(fast)), 0.02 * m);
  for (const auto& n : fleet) {
    if (!(n.value < s.below * m && m - n.value > s.mad_k * spread)) continue;
    double ratio = n.value / m;
    char r[16];
    std::snprintf(r, sizeof r, "%.2f", ratio);
    Finding f = make_finding("node:" + n.node, n.node, "fleet-slow", Severity::Warning,
                             n.node + ": " + s.figure + " " + figure_text(n.value) + ", " + r +
                                 "× the fleet median " + figure_text(m) + " (" +
                                 std::to_string(fleet.size()) + " nodes)");
    f.episode = s.figure;
    f.evidence.push_back("fleet median " + figure_text(m) + ", robust spread " +
                         figure_text(spread) + "; a node is slow under " + figure_text(s.below) +
                         "× the median and " + figure_text(s.mad_k) + " spreads below it");
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace llmwatch
