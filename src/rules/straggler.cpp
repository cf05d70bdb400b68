#include "rules/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

#include "util/robust_stats.h"
#include "util/units.h"

namespace llmwatch {
namespace {

double compute_median(const std::vector<RankSample>& s, std::size_t from, std::size_t to) {
  std::vector<double> v;
  for (std::size_t i = from; i < to; ++i) v.push_back(s[i].compute_s);
  return median(std::move(v));
}

struct RankNow {
  int rank;
  double now;   // median compute over the recent window
  double best;  // lowest window median in what the file still holds
  double window_s;
};

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

StragglerVerdict localise_stragglers(const std::vector<RankSeries>& ranks,
                                     const StragglerSettings& s) {
  StragglerVerdict out;
  std::map<std::string, std::vector<RankNow>> by_node;
  std::size_t window = std::max<std::size_t>(s.window, 1);
  // The ranks are judged over the same steps: a rank whose lines arrive late is compared
  // where it has written, and a pause that hit every rank at one step hits every window alike.
  std::int64_t last_common = INT64_MAX;
  for (const auto& r : ranks)
    if (!r.host.empty() && !r.samples.empty())
      last_common = std::min(last_common, r.samples.back().step);
  for (const auto& r : ranks) {
    if (r.host.empty()) continue;
    std::size_t upto = r.samples.size();
    while (upto > 0 && r.samples[upto - 1].step > last_common) --upto;
    if (upto < std::max<std::size_t>(s.min_samples, 1)) continue;
    std::vector<RankSample> v(r.samples.begin(), r.samples.begin() + upto);
    std::size_t from = v.size() > window ? v.size() - window : 0;
    RankNow n{r.rank, compute_median(v, from, v.size()), 0, 0};
    n.best = n.now;
    // Earlier whole windows, back from the recent one: the rank's own best.
    for (std::size_t end = from; end >= window; end -= window)
      n.best = std::min(n.best, compute_median(v, end - window, end));
    n.window_s = std::max(0.0, v.back().ts - v[from].ts);
    by_node[r.host].push_back(n);
  }
  if (by_node.size() < 2) {
    out.not_judged = "per-rank timing from fewer than 2 nodes";
    return out;
  }
  for (const auto& [node, mine] : by_node) {
    std::vector<double> others;
    for (const auto& [other, theirs] : by_node)
      if (other != node)
        for (const auto& r : theirs) others.push_back(r.now);
    double m = median(others);
    // The node's pace is its slowest rank's: one slow GPU holds the collective for all.
    const RankNow& slowest = *std::max_element(
        mine.begin(), mine.end(), [](const RankNow& a, const RankNow& b) { return a.now < b.now; });
    NodeSpeed n;
    n.node = node;
    for (const auto& r : mine) n.ranks.push_back(r.rank);
    n.window_s = slowest.window_s;
    if (m > 0 && slowest.now > 0) {
      n.compute_ratio = slowest.now / m;
      n.relative = std::min(1.0, m / slowest.now);
      n.individual = std::min(1.0, slowest.best / slowest.now);
      // Beyond the peers' own spread, with a floor: identical peers have a MAD of 0.
      double spread = std::max(1.4826 * mad(others, m), 0.02 * m);
      n.suspect = n.relative < s.slow_below && slowest.now - m > s.mad_k * spread;
    }
    out.nodes.push_back(std::move(n));
  }
  std::sort(out.nodes.begin(), out.nodes.end(), [](const NodeSpeed& a, const NodeSpeed& b) {
    return a.relative != b.relative ? a.relative < b.relative : a.node < b.node;
  });
  return out;
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
