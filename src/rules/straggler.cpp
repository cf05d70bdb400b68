#include "rules/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "util/robust_stats.h"
#include "util/units.h"

namespace llmwatch {
namespace {

double compute_median(const std::vector<RankSample>& s, std::size_t from, std::size_t to) {
  std::vector<double> v;
  for (std::size_t i = from; i < to; ++i) v.push_back(s[i].compute_s);
  return median(std::move(v));
}

std::string fixed(double v, const char* f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string rank_ranges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::vector<RankWindow> rank_windows(const std::vector<RankSeries>& ranks,
                                     const StragglerSettings& s) {
  std::vector<RankWindow> out;
  std::size_t window = std::max<std::size_t>(s.window, 1);
  std::int64_t last_common = INT64_MAX;
  for (const auto& r : ranks)
    if (!r.host.empty() && !r.samples.empty())
      last_common = std::min(last_common, r.samples.back().step);
  for (const auto& r : ranks) {
    if (r.host.empty()) continue;
    std::size_t upto = r.samples.size();
    while (upto > 0 && r.samples[upto - 1].step > last_common) --upto;
    if (upto < std::max<std::size_t>(s.min_samples, 1)) continue;
    const auto& v = r.samples;
    std::size_t from = upto > window ? upto - window : 0;
    RankWindow n{r.rank, r.host, compute_median(v, from, upto), 0, 0};
    n.best = n.now;
    // Earlier whole windows, back from the recent one: the rank's own best.
    for (std::size_t end = from; end >= window; end -= window)
      n.best = std::min(n.best, compute_median(v, end - window, end));
    n.window_s = std::max(0.0, v[upto - 1].ts - v[from].ts);
    out.push_back(std::move(n));
  }
  return out;
}

StragglerVerdict judge_nodes(const std::vector<RankWindow>& windows, const StragglerSettings& s) {
  StragglerVerdict out;
  // Nodes by first appearance; each node's ranks.
  std::unordered_map<std::string_view, std::size_t> node_of;
  std::vector<std::vector<const RankWindow*>> nodes;
  for (const auto& w : windows) {
    if (w.host.empty()) continue;
    auto [at, added] = node_of.emplace(w.host, nodes.size());
    if (added) nodes.emplace_back();
    nodes[at->second].push_back(&w);
  }
  if (nodes.size() < 2) {
    out.not_judged = "per-rank timing from fewer than 2 nodes";
    return out;
  }
  // Every rank's pace sorted once, each node's ranks' places in it noted (ascending). A node's
  // peers are that less its own few places: their median is found by stepping over them, and
  // their spread is only needed for a node slow enough to be a suspect. A job of 512 ranks is
  // one sort, not 64 (bench/straggler_bench.cpp).
  std::vector<std::pair<double, std::size_t>> paces;  // (now, node)
  paces.reserve(windows.size());
  for (std::size_t n = 0; n < nodes.size(); ++n)
    for (const RankWindow* r : nodes[n]) paces.emplace_back(r->now, n);
  std::sort(paces.begin(), paces.end());
  std::vector<double> all(paces.size());
  std::vector<std::vector<std::size_t>> places(nodes.size());
  for (std::size_t i = 0; i < paces.size(); ++i) {
    all[i] = paces[i].first;
    places[paces[i].second].push_back(i);
  }
  // The k-th smallest of `all` without the values at `skip` (ascending places).
  auto kth_without = [&](std::size_t k, const std::vector<std::size_t>& skip) {
    for (std::size_t at : skip)
      if (at <= k) ++k;
    return all[k];
  };
  std::vector<double> others;
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    const auto& mine = nodes[id];
    const std::size_t peers = all.size() - mine.size();
    // The node's pace is its slowest rank's: one slow GPU holds the collective for all.
    const RankWindow& slowest = **std::max_element(
        mine.begin(), mine.end(),
        [](const RankWindow* a, const RankWindow* b) { return a->now < b->now; });
    NodeSpeed n;
    n.node = mine.front()->host;
    for (const RankWindow* r : mine) n.ranks.push_back(r->rank);
    n.window_s = slowest.window_s;
    double m = 0;
    if (peers > 0) {
      double hi = kth_without(peers / 2, places[id]);
      m = peers % 2 ? hi : (kth_without(peers / 2 - 1, places[id]) + hi) / 2;
    }
    if (m > 0 && slowest.now > 0) {
      n.compute_ratio = slowest.now / m;
      n.relative = std::min(1.0, m / slowest.now);
      n.individual = std::min(1.0, slowest.best / slowest.now);
      if (n.relative < s.slow_below) {
        others.clear();
        for (std::size_t i = 0, j = 0; i < all.size(); ++i)
          if (j < places[id].size() && places[id][j] == i)
            ++j;
          else
            others.push_back(all[i]);
        // Beyond the peers' own spread, with a floor: identical peers have a MAD of 0.
        double spread = std::max(1.4826 * sorted_mad(others, m), 0.02 * m);
        n.suspect = slowest.now - m > s.mad_k * spread;
      }
    }
    out.nodes.push_back(std::move(n));
  }
  std::sort(out.nodes.begin(), out.nodes.end(), [](const NodeSpeed& a, const NodeSpeed& b) {
    return a.relative != b.relative ? a.relative < b.relative : a.node < b.node;
  });
  return out;
}

StragglerVerdict localise_stragglers(const std::vector<RankSeries>& ranks,
                                     const StragglerSettings& s) {
  return judge_nodes(rank_windows(ranks, s), s);
}

std::string straggler_summary(const NodeSpeed& n) {
  std::string s = n.node + ": " + fixed(n.relative, "%.2f") + "× the job median";
  if (n.window_s > 0) s += " over " + format_duration(Seconds(static_cast<long long>(n.window_s)));
  s += ", rank" + std::string(n.ranks.size() > 1 ? "s " : " ") + rank_ranges(n.ranks) +
       " compute " + fixed(n.compute_ratio, "%.2f") + "× median";
  s += n.individual < 0.95 ? " (" + fixed(n.individual, "%.2f") + "× its own best)"
                           : " (as slow as it has been all along)";
  if (!n.gpu_cause.empty()) s += "; " + n.gpu_cause;
  return s;
}

Finding straggler_finding(const std::string& label, const NodeSpeed& n) {
  Finding f = make_finding("job:" + label, label, "straggler", Severity::Warning,
                           "slow node " + straggler_summary(n));
  f.episode = n.node;
  return f;
}

}  // namespace llmwatch
