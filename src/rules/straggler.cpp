#include "rules/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
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

// A node's scores, before it is kept: its name and ranks are only pointed at, so a job of 64
// nodes copies and frees the records of only the few it keeps whole.
struct Scored : SpeedScores {
  std::string_view node;
  std::uint32_t id = 0;  // which node, for its ranks
};

// The rule for one node, whoever worked out its figures (llmwatch from every rank's window, or
// the job's rank 0): its slowest rank's pace `now` against the median `m` of the ranks on the
// other nodes, and against its own best. `spread` gives their robust deviation (<0 when unknown:
// then never a suspect); it is asked only of a node slow enough to need it.
template <class Spread>
void score(Scored& n, double now, double best, double m, Spread&& spread,
           const StragglerSettings& s) {
  if (!(m > 0 && now > 0)) return;
  n.compute_ratio = now / m;
  n.relative = std::min(1.0, m / now);
  n.individual = std::min(1.0, best / now);
  if (n.relative >= s.slow_below) return;
  // Beyond the peers' own spread, with a floor: identical peers have a MAD of 0.
  const double deviation = spread();
  n.suspect = deviation >= 0 && now - m > s.mad_k * std::max(deviation, 0.02 * m);
}

// The verdict on the scored nodes: the `keep` slowest (all, at 0) made whole, slowest first,
// their ranks filled in by `ranks_of(scored, ranks)`; the others named, in no order. Only the
// kept are sorted: a whole sort of a 64-node job's records was a fifth of judging it.
template <class RanksOf>
StragglerVerdict slowest_first(std::vector<Scored>& scored, std::size_t keep, RanksOf&& ranks_of) {
  const auto slower = [](const Scored& x, const Scored& y) {
    return x.relative != y.relative ? x.relative < y.relative : x.node < y.node;
  };
  const std::size_t kept = keep == 0 ? scored.size() : std::min(keep, scored.size());
  if (kept < scored.size())
    std::nth_element(scored.begin(), scored.begin() + kept, scored.end(), slower);
  std::sort(scored.begin(), scored.begin() + kept, slower);
  StragglerVerdict out;
  out.nodes.resize(kept);
  out.more.reserve(scored.size() - kept);
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const Scored& x = scored[i];
    out.window_s = std::max(out.window_s, x.window_s);
    if (i >= kept) {
      out.more.emplace_back(x.node);
      continue;
    }
    NodeSpeed& n = out.nodes[i];
    static_cast<SpeedScores&>(n) = x;
    n.node = x.node;
    ranks_of(x, n.ranks);
  }
  return out;
}

constexpr const char* kTooFewNodes = "per-rank timing from fewer than 2 nodes";

// The nodes of a "v":2 or "v":3 summary, whose figures the job's rank 0 worked out.
StragglerVerdict judge_node_rows(const RankWindows& windows, const StragglerSettings& s) {
  if ((windows.slowest_only ? windows.hosts.size() : windows.nodes.size()) < 2) {
    StragglerVerdict out;
    out.not_judged = kTooFewNodes;
    return out;
  }
  std::vector<Scored> scored(windows.nodes.size());
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const NodeWindow& w = windows.nodes[i];
    Scored& n = scored[i];
    n.node = windows.hosts[w.host];
    n.id = static_cast<std::uint32_t>(i);
    n.window_s = windows.window_s;
    score(
        n, w.now, w.best, w.peers, [&] { return w.spread; }, s);
  }
  StragglerVerdict out =
      slowest_first(scored, s.keep, [&](const Scored& x, std::vector<int>& ranks) {
        const NodeWindow& w = windows.nodes[x.id];
        ranks.assign(windows.node_ranks.begin() + w.ranks_from,
                     windows.node_ranks.begin() + w.ranks_to);
      });
  if (windows.slowest_only) {  // "v":3: rank 0 judged the nodes without a row as faster
    std::vector<bool> row(windows.hosts.size());
    for (const NodeWindow& w : windows.nodes) row[w.host] = true;
    out.more.reserve(out.more.size() + windows.hosts.size() - windows.nodes.size());
    for (std::size_t h = 0; h < row.size(); ++h)
      if (!row[h]) out.more.push_back(windows.hosts[h]);
  }
  return out;
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

RankWindows rank_windows(const std::vector<RankSeries>& ranks, const StragglerSettings& s) {
  RankWindows out;
  std::unordered_map<std::string_view, std::uint32_t> host_index;
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
    auto [at, added] = host_index.emplace(r.host, static_cast<std::uint32_t>(out.hosts.size()));
    if (added) out.hosts.push_back(r.host);
    RankWindow n{r.rank, at->second, compute_median(v, from, upto), 0, 0};
    n.best = n.now;
    // Earlier whole windows, back from the recent one: the rank's own best.
    for (std::size_t end = from; end >= window; end -= window)
      n.best = std::min(n.best, compute_median(v, end - window, end));
    n.window_s = std::max(0.0, v[upto - 1].ts - v[from].ts);
    out.ranks.push_back(n);
  }
  return out;
}

StragglerVerdict judge_nodes(const RankWindows& windows, const StragglerSettings& s) {
  if (!windows.nodes.empty() || windows.slowest_only) return judge_node_rows(windows, s);
  StragglerVerdict out;
  // Each rank's node, numbered by first appearance: its host's index says which, with no name
  // compared or hashed. Flat arrays, not a vector per node: at 512 ranks the allocations were
  // most of the judge's time.
  std::vector<std::uint32_t> node_of_host(windows.hosts.size(), UINT32_MAX);
  std::vector<const RankWindow*> first_of;  // a node's first rank (its name)
  std::vector<std::size_t> start(1, 0);     // then the node's rank count; prefix sums below
  std::vector<std::uint32_t> node_at(windows.size(), UINT32_MAX);
  std::size_t judged = 0;
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const RankWindow& w = windows[i];
    if (w.host >= node_of_host.size()) continue;  // names no node: not judged
    std::uint32_t& node = node_of_host[w.host];
    if (node == UINT32_MAX) {
      node = static_cast<std::uint32_t>(first_of.size());
      first_of.push_back(&w);
      start.push_back(0);
    }
    node_at[i] = node;
    ++start[node + 1];
    ++judged;
  }
  const std::size_t nodes = first_of.size();
  if (nodes < 2) {
    out.not_judged = kTooFewNodes;
    return out;
  }
  for (std::size_t n = 0; n < nodes; ++n) start[n + 1] += start[n];
  // members[start[n] .. start[n + 1]): node n's ranks, in the windows' order.
  std::vector<const RankWindow*> members(judged);
  std::vector<std::size_t> fill(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < windows.size(); ++i)
    if (node_at[i] != UINT32_MAX) members[fill[node_at[i]]++] = &windows[i];
  // Every rank's pace sorted once, each node's ranks' places in it noted (ascending). A node's
  // peers are that less its own few places: their median is found by stepping over them, and
  // their spread is only needed for a node slow enough to be a suspect. A job of 512 ranks is
  // one sort, not 64 (bench/straggler_bench.cpp).
  std::vector<std::pair<double, std::uint32_t>> paces;  // (now, node)
  paces.reserve(judged);
  for (std::size_t n = 0; n < nodes; ++n)
    for (std::size_t i = start[n]; i < start[n + 1]; ++i)
      paces.emplace_back(members[i]->now, static_cast<std::uint32_t>(n));
  std::sort(paces.begin(), paces.end());
  std::vector<double> all(judged);
  std::vector<std::size_t> places(judged);  // places[start[n] ..]: node n's, ascending
  fill.assign(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < judged; ++i) {
    all[i] = paces[i].first;
    places[fill[paces[i].second]++] = i;
  }
  // The k-th smallest of `all` without the values at `skip` (ascending places).
  auto kth_without = [&](std::size_t k, std::span<const std::size_t> skip) {
    for (std::size_t at : skip)
      if (at <= k) ++k;
    return all[k];
  };
  std::vector<double> others;
  std::vector<Scored> scored(nodes);
  for (std::size_t id = 0; id < nodes; ++id) {
    std::span<const RankWindow* const> mine(members.data() + start[id], start[id + 1] - start[id]);
    std::span<const std::size_t> skip(places.data() + start[id], mine.size());
    const std::size_t peers = judged - mine.size();
    // The node's pace is its slowest rank's: one slow GPU holds the collective for all.
    const RankWindow& slowest = **std::max_element(
        mine.begin(), mine.end(),
        [](const RankWindow* a, const RankWindow* b) { return a->now < b->now; });
    Scored& n = scored[id];
    n.node = windows.host_of(*first_of[id]);
    n.id = static_cast<std::uint32_t>(id);
    n.window_s = slowest.window_s;
    double m = 0;
    if (peers > 0) {
      double hi = kth_without(peers / 2, skip);
      m = peers % 2 ? hi : (kth_without(peers / 2 - 1, skip) + hi) / 2;
    }
    score(
        n, slowest.now, slowest.best, m,
        [&] {
          others.clear();
          for (std::size_t i = 0, j = 0; i < all.size(); ++i)
            if (j < skip.size() && skip[j] == i)
              ++j;
            else
              others.push_back(all[i]);
          return 1.4826 * sorted_mad(others, m);
        },
        s);
  }
  return slowest_first(scored, s.keep, [&](const Scored& x, std::vector<int>& ranks) {
    ranks.reserve(start[x.id + 1] - start[x.id]);
    for (std::size_t i = start[x.id]; i < start[x.id + 1]; ++i) ranks.push_back(members[i]->rank);
  });
}

StragglerVerdict localise_stragglers(const std::vector<RankSeries>& ranks,
                                     const StragglerSettings& s) {
  return judge_nodes(rank_windows(ranks, s), s);
}

std::string straggler_summary(const NodeSpeed& n) {
  std::string s = n.node + ": " + fixed(n.relative, "%.2f") + "× the job median";
  if (n.window_s >= 1) s += " over " + format_duration(Seconds(static_cast<long long>(n.window_s)));
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
