#pragma once
// Fail-slow localisation inside one job (#28). In synchronous training one slow GPU sets the
// pace for all: every rank shows the same step time, so the step time cannot say where. The
// compute before the collective can: the slow node's ranks compute longer than their peers.
// Each node is judged against the other nodes of the same job (leave-one-out median and MAD
// of the ranks' recent compute times: robust to jitter, a hiccup on one rank, a rank that
// logs late) and against its own best. Pure.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "probes/rank_timing.h"
#include "rules/finding.h"

namespace llmwatch {

struct StragglerSettings {
  double slow_below = 0.85;      // relative speed under which a node is a suspect
  std::size_t window = 20;       // recent steps per rank that are judged (their median)
  std::size_t min_samples = 20;  // fewer steps than this on a rank: it is not judged yet
  double mad_k = 4;              // and it must lie this many robust deviations out
  // Nodes kept whole in the verdict, the slowest first; the others are kept by name only
  // (0: all whole). The cycle keeps the few its views show: at 1,000 jobs of 64 nodes, building
  // and freeing every node's record (its name, its ranks) was a third of the judge's time.
  std::size_t keep = 0;
};

// What the rule says of one node.
struct SpeedScores {
  // Scores from 0 to 1, as NVIDIA's resiliency extension gives them: relative to the other
  // nodes of the job now, and individual, against this node's own best window.
  double relative = 1, individual = 1;
  double compute_ratio = 1;  // its slowest rank's compute / the others' median
  double window_s = 0;       // the time its judged window covers
  bool suspect = false;      // slow against its peers, beyond their noise
};

struct NodeSpeed : SpeedScores {
  std::string node;
  std::vector<int> ranks;  // its ranks
  // What its GPUs show as the reason ("GPU 2 HW Slowdown, SM clock 1095/1980 MHz"), from its
  // telemetry (rules/gpu_telemetry_series.h); "" when they show none or were not looked at.
  std::string gpu_cause;
};

struct StragglerVerdict {
  std::vector<NodeSpeed> nodes;   // slowest first (the `keep` slowest, where it is set)
  std::vector<std::string> more;  // the other judged nodes' names, in no order
  std::string not_judged;         // why nothing could be judged ("" when it was)
  double window_s = 0;            // the longest time a node's judged window covers
  const NodeSpeed* suspect() const {
    return !nodes.empty() && nodes.front().suspect ? &nodes.front() : nullptr;
  }
  std::size_t judged() const { return nodes.size() + more.size(); }
  // Every judged node's name, the kept ones first.
  template <class F>
  void for_each_name(F&& f) const {
    for (const auto& n : nodes) f(n.node);
    for (const auto& n : more) f(n);
  }
};

// Each rank's judged window from its samples, over the steps every rank has written: a rank
// whose lines arrive late is compared where it has written, and a pause that hit every rank at
// one step hits every window alike. Ranks with fewer than min_samples such steps are left out.
RankWindows rank_windows(const std::vector<RankSeries>& ranks, const StragglerSettings& s = {});

// The nodes judged from their ranks' windows, whether llmwatch computed them from the rank
// files or the job's rank 0 did (summary.json): one rule for both.
StragglerVerdict judge_nodes(const RankWindows& windows, const StragglerSettings& s = {});

// judge_nodes(rank_windows(ranks, s), s).
StragglerVerdict localise_stragglers(const std::vector<RankSeries>& ranks,
                                     const StragglerSettings& s = {});

// "12-15,20": ranks as a person reads them.
std::string rank_ranges(std::vector<int> ranks);

// "node-3: 0.71× the job median over 12m, ranks 12-15 compute 1.41× median (0.74× its own
// best)": the suspect's headline.
std::string straggler_summary(const NodeSpeed& n);

// The finding for a job with a suspect node: job:<label>/straggler, a warning whose episode is
// the node (another node is another finding).
Finding straggler_finding(const std::string& label, const NodeSpeed& n);

}  // namespace llmwatch
