#include "rules/gpu_telemetry_series.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "util/robust_stats.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// A GPU's clock this far under what the job's other nodes' GPUs run at is slow by itself,
// whatever reason nvidia-smi gives (or none: a clock it cannot explain).
constexpr double kClockBelowPeers = 0.9;

// A reason of the GPU's own that held its clocks this share of the window (by its counters),
// and this much more than on the job's other GPUs, is a cause: a GPU throttled now and then
// slows every step it throttles in, though most samples catch it between.
constexpr double kHeldShare = 0.2;
constexpr double kHeldShareOverPeers = 0.1;

// The counted reasons that are the GPU's own (SW Power Cap is the site's policy).
using Counter = std::optional<double> GpuTelemetry::*;
const std::pair<const char*, Counter> kHeldCounters[] = {
    {"HW Thermal Slowdown", &GpuTelemetry::hw_thermal_us},
    {"HW Power Brake Slowdown", &GpuTelemetry::hw_power_brake_us},
    {"SW Thermal Slowdown", &GpuTelemetry::sw_thermal_us},
};

// Per GPU, the share of the time each counted reason held its clocks: from the last sample
// before `since` (the window's start; else its first sample in it) to its last sample. A
// counter that went back (a driver reload) or two samples under 1 s apart give none.
std::map<int, std::map<std::string, double>> counted_shares(
    const std::vector<TelemetrySample>& series, double since) {
  std::map<int, std::map<std::string, double>> out;
  if (series.empty()) return out;
  const TelemetrySample& last = series.back();
  for (const auto& end : last.gpus)
    for (const auto& [name, counter] : kHeldCounters) {
      if (!(end.*counter)) continue;
      const TelemetrySample* base = nullptr;
      const GpuTelemetry* from = nullptr;
      for (const auto& s : series) {
        if (&s == &last) break;
        auto g = std::find_if(s.gpus.begin(), s.gpus.end(),
                              [&](const GpuTelemetry& t) { return t.gpu == end.gpu; });
        if (g == s.gpus.end() || !((*g).*counter)) continue;
        if (s.ts < since || !base) {
          base = &s;
          from = &*g;
        }
        if (s.ts >= since) break;
      }
      if (!base) continue;
      double span = last.ts - base->ts, held_us = *(end.*counter) - *((*from).*counter);
      if (span < 1 || held_us < 0) continue;
      out[end.gpu][name] = std::min(1.0, held_us / 1e6 / span);
    }
  return out;
}

std::string percent(double ratio) {
  return format_whole(ratio * 100) + "%";
}

// One GPU of the suspect over the window.
struct GpuOverWindow {
  int gpu = -1;
  int samples = 0, held = 0;
  std::map<std::string, int> reasons;  // held-back reasons and in how many samples
  std::vector<double> clock_ratio, sm_mhz, processes;
  std::map<std::string, double> counted;  // reasons its counters say held it, and their share
  GpuTelemetry last;
};

std::vector<const TelemetrySample*> samples_since(const std::vector<TelemetrySample>& series,
                                                  double since) {
  std::vector<const TelemetrySample*> out;
  for (const auto& s : series)
    if (s.ts >= since) out.push_back(&s);
  // A node checked less often than the window is long: its latest sample is all there is.
  if (out.empty() && !series.empty()) out.push_back(&series.back());
  return out;
}

}  // namespace

TelemetryEvidence telemetry_evidence(const std::string& node, const TelemetrySeries& own,
                                     std::span<const TelemetrySeries* const> peers, double since) {
  TelemetryEvidence out;
  auto mine = samples_since(own, since);
  if (mine.empty()) {
    out.lines.push_back(node +
                        ": no GPU telemetry (its node-check has not run in the job: [gpu] "
                        "collect = \"srun\" gathers it under the job's load)");
    return out;
  }
  // The job's other GPUs over the window: their clocks, and how many compute processes they run
  // (its ranks per GPU).
  std::vector<double> peer_ratios, peer_process_counts;
  for (const auto* series : peers)
    for (const auto* s : samples_since(*series, since))
      for (const auto& g : s->gpus) {
        if (auto r = g.clock_ratio()) peer_ratios.push_back(*r);
        if (g.processes) peer_process_counts.push_back(*g.processes);
      }
  std::optional<double> peer_clock;
  if (!peer_ratios.empty()) peer_clock = median(peer_ratios);
  // Only where they run some: a node-check that cannot see the job's own processes cannot see
  // a stranger's.
  std::optional<double> peer_processes;
  if (!peer_process_counts.empty() && median(peer_process_counts) >= 1)
    peer_processes = median(peer_process_counts);

  // The peers' share of the time under each counted reason (their median GPU's).
  std::map<std::string, std::vector<double>> peer_share_lists;
  for (const auto* series : peers)
    for (const auto& [_, shares] : counted_shares(*series, since))
      for (const auto& [name, share] : shares) peer_share_lists[name].push_back(share);
  std::map<std::string, double> peer_shares;
  for (const auto& [name, list] : peer_share_lists) peer_shares[name] = median(list);
  const auto own_shares = counted_shares(own, since);
  // A GPU's counted reasons that held it long enough, and longer than on its peers.
  auto counted_held = [&](int gpu) {
    std::map<std::string, double> held;
    auto it = own_shares.find(gpu);
    if (it == own_shares.end()) return held;
    for (const auto& [name, share] : it->second) {
      auto peer = peer_shares.find(name);
      double theirs = peer == peer_shares.end() ? 0 : peer->second;
      if (share >= kHeldShare && share >= theirs + kHeldShareOverPeers) held[name] = share;
    }
    return held;
  };

  // A GPU's compute processes over the window, when more than the peers' GPUs run.
  auto shared_by = [&](const GpuOverWindow& g) -> std::optional<double> {
    if (!peer_processes || g.processes.empty()) return std::nullopt;
    double n = median(g.processes);
    return n >= *peer_processes + 1 ? std::optional<double>(n) : std::nullopt;
  };
  std::map<int, GpuOverWindow> gpus;
  for (const auto* s : mine)
    for (const auto& t : s->gpus) {
      auto& g = gpus[t.gpu];
      g.gpu = t.gpu;
      ++g.samples;
      if (t.held_back()) ++g.held;
      for (const auto& r : t.reasons)
        if (r != "SW Power Cap" && r != "Sync Boost") ++g.reasons[r];
      if (auto r = t.clock_ratio()) g.clock_ratio.push_back(*r);
      if (t.sm_mhz) g.sm_mhz.push_back(*t.sm_mhz);
      if (t.processes) g.processes.push_back(*t.processes);
      g.last = t;
    }
  for (auto& [index, g] : gpus) g.counted = counted_held(index);
  double span = mine.back()->ts - mine.front()->ts;
  std::string over = std::to_string(mine.size()) + " sample" + (mine.size() == 1 ? "" : "s") +
                     (span >= 1 ? " over " + format_duration(Seconds(std::llround(span))) : "");

  // The GPUs that stand out: held back by their own hardware in most samples, a clock well
  // under the peers', a narrowed link, or shared: more compute processes on it than the
  // job's other GPUs run, over most of the window (a second process on a real H200 doubled a
  // trainer's step while its clocks, power and use read like the trainer's alone).
  const GpuOverWindow* worst = nullptr;
  double worst_clock = 2;
  for (const auto& [index, g] : gpus) {
    double clock = g.clock_ratio.empty() ? 1 : median(g.clock_ratio);
    bool held = g.held * 2 > g.samples || !g.counted.empty();
    bool slow_clock =
        peer_clock && !g.clock_ratio.empty() && clock < kClockBelowPeers * *peer_clock;
    bool narrowed =
        g.last.pcie_width && g.last.pcie_width_max && *g.last.pcie_width < *g.last.pcie_width_max;
    auto processes = shared_by(g);
    bool shared = processes.has_value();
    if (!held && !slow_clock && !narrowed && !shared) continue;
    std::string line = node + " " + describe(g.last);
    if (g.held * 2 > g.samples)
      line += " (held back in " + std::to_string(g.held) + " of " + over + ")";
    for (const auto& [reason, share] : g.counted) {
      auto peer = peer_shares.find(reason);
      line += "; " + reason + " " + percent(share) + " of the time by its counters";
      if (peer != peer_shares.end())
        line += ", the job's other nodes' GPUs " + percent(peer->second);
    }
    if (peer_clock && !g.clock_ratio.empty())
      line += "; SM clock " + percent(clock) + " of its maximum, the job's other nodes' GPUs " +
              percent(*peer_clock);
    if (shared)
      line += "; " + format_whole(*processes) +
              " compute processes on it, the job's other nodes' GPUs " +
              format_whole(*peer_processes) + ": another process competes for it";
    out.lines.push_back(std::move(line));
    // The headline GPU: a hardware reason first, then a shared GPU, then the lowest clock.
    double rank = clock - (held ? 2 : 0) - (shared ? 1 : 0);
    if (!worst || rank < worst_clock) {
      worst = &g;
      worst_clock = rank;
    }
  }
  if (worst) {
    std::string cause = "GPU " + std::to_string(worst->gpu);
    for (const auto& [reason, _] : worst->reasons) cause += " " + reason;
    for (const auto& [reason, share] : worst->counted)
      cause += (worst->reasons.count(reason) ? " " : " " + reason + " ") + percent(share) +
               " of the time";
    if (!worst->sm_mhz.empty()) {
      cause += ", SM clock " + format_whole(median(worst->sm_mhz));
      if (worst->last.sm_max_mhz) cause += "/" + format_whole(*worst->last.sm_max_mhz);
      cause += " MHz";
    }
    if (worst->last.pcie_width && worst->last.pcie_width_max &&
        *worst->last.pcie_width < *worst->last.pcie_width_max)
      cause += ", PCIe x" + format_whole(*worst->last.pcie_width) + " of x" +
               format_whole(*worst->last.pcie_width_max);
    if (auto n = shared_by(*worst)) cause += ", " + format_whole(*n) + " compute processes";
    out.cause = std::move(cause);
    return out;
  }
  // Nothing on the GPUs: that is evidence too (the CPU, the data loader, the network).
  std::vector<double> clocks;
  for (const auto& [_, g] : gpus) clocks.insert(clocks.end(), g.sm_mhz.begin(), g.sm_mhz.end());
  std::string line = node + ": its " + std::to_string(gpus.size()) + " GPU" +
                     (gpus.size() == 1 ? "" : "s") + " show no reason of their own in " + over;
  if (!clocks.empty()) line += " (SM clock " + format_whole(median(clocks)) + " MHz median)";
  line += ": the slowness is not in its GPUs (look at its CPU, data loading, network)";
  out.lines.push_back(std::move(line));
  return out;
}

TelemetryEvidence telemetry_evidence(const std::string& node, const TelemetrySeries& own,
                                     const std::vector<TelemetrySeries>& peers, double since) {
  std::vector<const TelemetrySeries*> pointed;
  pointed.reserve(peers.size());
  for (const auto& series : peers) pointed.push_back(&series);
  return telemetry_evidence(node, own, pointed, since);
}

}  // namespace llmwatch
