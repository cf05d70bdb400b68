#pragma once
// Per-rank timing of a synchronous training job, simulated with the noise real runs have
// (#28): log-normal jitter on every rank's compute, checkpoint pauses and evaluation passes
// that hit every rank at once, data-loader hiccups on one rank, a rank whose lines arrive
// late. Optionally one node computes slower. Shared by the straggler tests and the bench.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "probes/rank_timing.h"
#include "rules/straggler.h"
#include "util/robust_stats.h"

namespace llmwatch::testing {

struct TimingSim {
  int nodes = 4, ranks_per_node = 8, steps = 60;
  double compute_s = 0.4, sigma = 0.1;  // log-normal jitter (±10%)
  std::string slow_node;                // "" none; else "node-<i>"
  double slow_speed = 1;                // its pace (0.8: computes 1.25× longer)
  int slow_from_step = 0;               // when it turned slow
  bool noise_events = true;             // checkpoints, evaluations, hiccups, a late rank

  std::vector<RankSeries> run(std::mt19937& rng) const {
    std::lognormal_distribution<double> jitter(0, sigma);
    std::uniform_int_distribution<int> pick_rank(0, nodes * ranks_per_node - 1);
    std::uniform_int_distribution<int> pick_step(0, std::max(0, steps - 4));
    int hiccup_rank = pick_rank(rng), hiccup_at = pick_step(rng);
    int late_rank = pick_rank(rng), late_by = noise_events ? 1 + pick_step(rng) % 10 : 0;
    int checkpoint_at = pick_step(rng), eval_at = pick_step(rng);
    std::vector<RankSeries> out;
    for (int n = 0; n < nodes; ++n)
      for (int g = 0; g < ranks_per_node; ++g) {
        RankSeries r;
        r.rank = n * ranks_per_node + g;
        r.host = "node-" + std::to_string(n + 1);
        double t = 1'800'000'000;
        for (int step = 0; step < steps; ++step) {
          double c = compute_s * jitter(rng);
          if (r.host == slow_node && step >= slow_from_step) c /= slow_speed;
          if (noise_events) {
            if (r.rank == hiccup_rank && step >= hiccup_at && step < hiccup_at + 3) c *= 5;
            if (step == checkpoint_at) c *= 1.5;  // every rank: the save's device copies
            if (step >= eval_at && step < eval_at + 2) continue;  // every rank: no train step
            if (r.rank == late_rank && step >= steps - late_by) continue;  // not written yet
          }
          t += c + 0.05;
          r.samples.push_back({step, t, c, 0.05});
        }
        out.push_back(std::move(r));
      }
    return out;
  }
};

// The summary.json the helper's rank 0 writes (its summary mode) for these windows, at `ts`:
// node names in the order they first appear, paces to the microsecond.
inline std::string summary_json(const RankWindows& windows, double ts, double window_s = 30,
                                long long step = 59) {
  const std::vector<std::string>& hosts = windows.hosts;
  std::string host, rank, now, best;
  for (const auto& w : windows) {
    const char* sep = host.empty() ? "" : ",";
    host += sep + std::to_string(w.host);
    rank += sep + std::to_string(w.rank);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%.6f", sep, w.now);
    now += buf;
    std::snprintf(buf, sizeof buf, "%s%.6f", sep, w.best);
    best += buf;
  }
  std::string names;
  for (const auto& h : hosts) names += (names.empty() ? "\"" : ",\"") + h + "\"";
  char head[128];
  std::snprintf(head, sizeof head, "{\"v\":1,\"ts\":%.3f,\"step\":%lld,\"window_s\":%.3f,", ts,
                step, window_s);
  return head + std::string("\"hosts\":[") + names + "],\"host\":[" + host + "],\"rank\":[" + rank +
         "],\"now\":[" + now + "],\"best\":[" + best + "]}\n";
}

// The same windows as the helper writes them now ("v":2, a row a node), worked out here by brute
// force from every rank's window, as a reference for the helper's way (llmwatch_timing.py
// _node_rows) and llmwatch's (rules/straggler.cpp): each node's slowest rank (the first such),
// the median of the ranks on the other nodes, and their spread for the `spread_for` slowest.
// Numbers are written whole (%.17g), so a row judges exactly as its ranks do; or, with `decimals`
// >= 0, as the helper writes them (6: to the microsecond). With `slowest_only`, as the helper
// writes them now ("v":3): rows for the `spread_for` slowest alone.
inline std::string summary_json_v2(const RankWindows& windows, double ts, double window_s = 30,
                                   long long step = 59, int decimals = -1,
                                   std::size_t spread_for = 8, bool slowest_only = false) {
  struct Row {
    std::vector<int> ranks;
    const RankWindow* slowest = nullptr;
    double peers = 0, relative = 1;
  };
  std::vector<Row> rows(windows.hosts.size());
  for (const auto& w : windows) {
    Row& r = rows[w.host];
    r.ranks.push_back(w.rank);
    if (!r.slowest || w.now > r.slowest->now) r.slowest = &w;
  }
  auto others = [&](std::uint32_t host) {
    std::vector<double> v;
    for (const auto& w : windows)
      if (w.host != host) v.push_back(w.now);
    return v;
  };
  std::vector<std::uint32_t> order;
  for (std::uint32_t h = 0; h < rows.size(); ++h) {
    Row& r = rows[h];
    auto v = others(h);
    r.peers = v.empty() ? 0 : median(v);
    if (r.peers > 0 && r.slowest->now > 0) r.relative = std::min(1.0, r.peers / r.slowest->now);
    order.push_back(h);
  }
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return rows[a].relative != rows[b].relative ? rows[a].relative < rows[b].relative
                                                : windows.hosts[a] < windows.hosts[b];
  });
  order.resize(std::min(order.size(), spread_for));
  std::sort(order.begin(), order.end());
  auto number = [&](double v) {
    char buf[40];
    if (decimals < 0)
      std::snprintf(buf, sizeof buf, "%.17g", v);
    else
      std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return std::string(buf);
  };
  auto list = [](const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]";
  };
  std::vector<std::string> hosts, ranks, slowest, now, best, peers, spread_of, spread;
  for (std::size_t h = 0; h < rows.size(); ++h) {
    const Row& r = rows[h];
    std::string ranges = rank_ranges(r.ranks);
    std::replace(ranges.begin(), ranges.end(), ',', ' ');
    hosts.push_back("\"" + windows.hosts[h] + "\"");
    ranks.push_back("\"" + ranges + "\"");
    if (slowest_only && std::find(order.begin(), order.end(), h) == order.end()) continue;
    slowest.push_back(std::to_string(r.slowest->rank));
    now.push_back(number(r.slowest->now));
    best.push_back(number(r.slowest->best));
    peers.push_back(number(r.peers));
  }
  for (std::uint32_t h : order) {
    auto v = others(h);
    spread_of.push_back(std::to_string(h));
    spread.push_back(number(v.empty() ? 0 : 1.4826 * mad(v, rows[h].peers)));
  }
  char head[160];
  std::snprintf(head, sizeof head, "{\"v\":%d,\"ts\":%.3f,\"step\":%lld,\"window_s\":%.3f,",
                slowest_only ? 3 : 2, ts, step, window_s);
  const std::string figures = ",\"slowest\":" + list(slowest) + ",\"now\":" + list(now) +
                              ",\"best\":" + list(best) + ",\"peers\":" + list(peers);
  if (slowest_only)
    return head + std::string("\"hosts\":") + list(hosts) + ",\"ranks\":" + list(ranks) +
           ",\"rows\":" + list(spread_of) + figures + ",\"spread\":" + list(spread) + "}\n";
  return head + std::string("\"hosts\":") + list(hosts) + ",\"ranks\":" + list(ranks) + figures +
         ",\"spread_of\":" + list(spread_of) + ",\"spread\":" + list(spread) + "}\n";
}

}  // namespace llmwatch::testing
