#include "cycle/checks/straggler_judge.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "rules/gpu_telemetry_series.h"
#include "slurm/hostlist.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// The run's remaining work at its healthy pace, within the task's time limit (past it, the
// time limit ends the task and the run goes on elsewhere anyway); <0 when unknown.
double remaining_healthy_s(const JobWork& w, double speed, double now) {
  const JobProgress& p = w.progress;
  double step_s = p.observed_interval > 0 ? p.observed_interval : p.step_time.value_or(0);
  if (!p.step || step_s <= 0) return -1;
  std::optional<std::int64_t> max =
      w.settings->max_steps > 0 ? std::optional<std::int64_t>(w.settings->max_steps) : p.max_steps;
  if (!max) return -1;
  double left = static_cast<double>(std::max<std::int64_t>(0, *max - *p.step)) * step_s * speed;
  const SlurmJob& task = *w.obs.running;
  if (task.time_limit_minutes > 0 && task.start_time > 0) {
    double until_limit = static_cast<double>(task.start_time + task.time_limit_minutes * 60) - now;
    left = std::min(left, std::max(0.0, until_limit) * speed);
  }
  return left;
}

EvictionCase eviction_case(const JobWork& w, Store& store, double speed, double now) {
  const JobProgress& p = w.progress;
  EvictionCase c;
  c.speed = speed;
  c.margin = w.settings->evict_margin;
  c.remaining_s = remaining_healthy_s(w, speed, now);
  // Cancel to the new run's first step: this task's own start to its first step, measured.
  if (auto first = store.progress_reached(w.label, p.task_seen, 0))
    c.restart_s = std::max(0.0, *first - p.task_seen);
  // With a save switch the run saves first, and loses only the save; without one, what it
  // computed since its last checkpoint (or its first step).
  if (!w.settings->save_switch.empty() && p.save_seconds) {
    c.save_s = *p.save_seconds;
  } else {
    double since = std::max(p.checkpoint_done, p.task_seen + std::max(0.0, c.restart_s));
    c.lost_work_s = std::max(0.0, now - since);
  }
  return c;
}

// Per-rank timing older than this (or than two judged windows, for very slow steps) is not
// judged: rank 0 rewrites its summary every half window, rank files grow every step.
constexpr double kTimingStaleAfter = 600;

// The nodes a job's views, metrics and finding show: its slowest, the suspect first. Every node
// of every job would be 64,000 metric series (and as many numbers written a cycle) at 1,000 jobs
// of 64 nodes.
// The helper's rows give the peers' spread of as many slowest nodes (llmwatch_timing.py
// _SPREAD_FOR): the suspect flags shown are then as the rank files would give them.
constexpr std::size_t kNodesShown = 8;

// Of those, the views and metrics show the ones slower than healthy jitter: under this share of
// their peers' pace, or a suspect (whatever straggler_speed is set to). A healthy job's 8 slowest
// of 64 nodes are a new draw at each rewrite of its summary: each rewrite wrote its view to the
// state again and swapped series of the gauge in and out (churn Prometheus pays for, at 1,000
// jobs 300 rewrites a cycle), though they said only "within jitter".
constexpr double kShownBelow = 0.95;

// How many of the verdict's first (slowest) `shown` nodes the views show.
std::size_t shown_in_views(const std::vector<NodeSpeed>& nodes, std::size_t shown,
                           double slow_below) {
  const double below = std::max(kShownBelow, slow_below);
  std::size_t n = 0;
  while (n < shown && (nodes[n].suspect || nodes[n].relative < below)) ++n;
  return n;
}

// The task's nodes (its Slurm hostlist), sorted: expanded once per allocation, not once per
// verdict (a 64-node job's summary is rewritten every few cycles).
struct Allocation {
  std::string hostlist;
  std::vector<std::string> sorted;
  // A summary's hosts last found all in it: a rewritten summary of the same hosts names none
  // outside it (a verdict's names are its summary's hosts). Comparing the lists is a tenth of
  // looking each name up, which was 40 % of judging a rewritten summary. Forgotten with the
  // allocation it was checked against.
  std::vector<std::string> hosts_inside;
  // Or, for a "v":2 summary, the size and hash of its "hosts" array's text (RankWindows::Layout,
  // already trusted to take a rewrite's nodes from the summary before): the same text is the
  // same hosts, and no 64 names are compared a rewrite.
  std::size_t inside_size = 0, inside_hash = 0;
  void set(const std::string& list) {
    hostlist = list;
    sorted = hosts_in(list);
    std::sort(sorted.begin(), sorted.end());
    forget_inside();
  }
  void forget_inside() {
    hosts_inside.clear();
    inside_size = inside_hash = 0;
  }
  bool inside(const RankWindows& w) const {
    if (w.hosts.empty()) return false;
    if (w.layout.hosts_size > 0)
      return w.layout.hosts_size == inside_size && w.layout.hosts_hash == inside_hash;
    return w.hosts == hosts_inside;
  }
  void found_inside(const RankWindows& w) {
    if (w.layout.hosts_size > 0) {
      inside_size = w.layout.hosts_size;
      inside_hash = w.layout.hosts_hash;
    } else {
      hosts_inside = w.hosts;
    }
  }
  bool holds(const std::string& node) const {
    return std::binary_search(sorted.begin(), sorted.end(), node);
  }
};

// The nodes a verdict names that are not the task's: the timing is the job's own writing, and a
// name in it that is another job's node, or a host name that is not Slurm's, must never be
// evicted, drained or charged.
std::vector<std::string> outside_allocation(const StragglerVerdict& v, const Allocation& mine) {
  std::vector<std::string> out;
  v.for_each_name([&](const std::string& node) {
    if (!mine.holds(node)) out.push_back(node);
  });
  return out;
}

// A job's verdict, and the nodes it names outside the task's allocation.
struct Judged {
  std::shared_ptr<const StragglerVerdict> verdict;
  std::vector<std::string> outside;
};

// A job's verdict, kept while what it judged is the same object (a summary rank 0 has not
// rewritten: the read gives the same windows) or the same version (Megatron's intervals with no
// new one), and handed on shared, not copied: at 1,000 jobs of 512 ranks, judging (and copying)
// every unchanged summary's verdict every cycle was most of what slow-node localisation cost
// (bench/straggler_bench.cpp, llmwatch_bench --ranks 512). Its nodes are checked against the
// allocation again only when either changed.
Judged kept_verdict(const std::string& key, const std::shared_ptr<const RankWindows>& windows,
                    const std::string& version, const StragglerSettings& settings,
                    const std::string& allocation, const std::function<StragglerVerdict()>& judge) {
  struct Kept {
    std::shared_ptr<const RankWindows> windows;  // held, so never a reused address
    std::string version;
    double slow_below = 0;
    std::shared_ptr<const StragglerVerdict> verdict;
    Allocation allocation;
    std::vector<std::string> outside;
  };
  static std::mutex mu;
  static std::unordered_map<std::string, Kept> kept;
  std::lock_guard lock(mu);
  if (kept.size() >= 16384 && !kept.count(key)) kept.clear();
  Kept& k = kept[key];
  const bool rejudge = k.windows != windows || k.version != version ||
                       k.slow_below != settings.slow_below || !k.verdict;
  if (rejudge) {
    k.verdict = std::make_shared<const StragglerVerdict>(judge());
    k.windows = windows;
    k.version = version;
    k.slow_below = settings.slow_below;
  }
  const bool moved = k.allocation.hostlist != allocation;
  if (moved) k.allocation.set(allocation);
  Allocation& mine = k.allocation;
  if (rejudge || moved) {
    if (windows && mine.inside(*windows)) {
      k.outside.clear();
    } else {
      k.outside = outside_allocation(*k.verdict, mine);
      mine.forget_inside();
      if (windows && k.outside.empty() &&
          std::all_of(windows->hosts.begin(), windows->hosts.end(),
                      [&](const std::string& h) { return mine.holds(h); }))
        mine.found_inside(*windows);
    }
  }
  return {k.verdict, k.outside};
}

}  // namespace

TelemetryEvidence gpu_evidence(Store& store, const StragglerVerdict& verdict,
                               const NodeSpeed& suspect, double now) {
  std::shared_ptr<const TelemetrySeries> own;
  std::vector<std::shared_ptr<const TelemetrySeries>> held;
  store.transaction([&] {
    own = store.telemetry_series(suspect.node);
    verdict.for_each_name([&](const std::string& node) {
      if (node != suspect.node) held.push_back(store.telemetry_series(node));
    });
  });
  std::vector<const TelemetrySeries*> peers;
  peers.reserve(held.size());
  for (const auto& series : held) peers.push_back(series.get());
  return telemetry_evidence(suspect.node, *own, peers, now - suspect.window_s);
}

std::vector<Finding> judge_straggler(JobWork& w, Store& store, double now) {
  std::vector<Finding> out;
  if (!w.timing || !w.obs.running || w.obs.running->ending()) return out;
  if (!w.timing->error.empty()) {
    Finding f = make_finding("job:" + w.label, w.label, "timing-unreadable", Severity::Unknown,
                             "cannot read the per-rank timing of " + w.label);
    f.evidence.push_back(w.timing->error);
    out.push_back(std::move(f));
    return out;
  }
  StragglerSettings settings;
  settings.slow_below = w.settings->straggler_speed;
  settings.keep = kNodesShown;
  if (w.timing->window > 0) settings.window = settings.min_samples = w.timing->window;
  // A large job's rank 0 summarised every rank's window (summary.json); else the rank files.
  const RankTimingRead& t = *w.timing;
  const std::string& allocation = w.obs.running->nodes;
  Judged judged;
  if (t.windows) {
    judged = kept_verdict(w.settings->timing_dir, t.windows, "", settings, allocation,
                          [&] { return judge_nodes(*t.windows, settings); });
  } else if (!t.version.empty()) {
    judged = kept_verdict("log:" + w.label, nullptr, t.version, settings, allocation,
                          [&] { return localise_stragglers(t.ranks, settings); });
  } else {
    judged.verdict =
        std::make_shared<const StragglerVerdict>(localise_stragglers(t.ranks, settings));
    Allocation mine;
    mine.set(allocation);
    judged.outside = outside_allocation(*judged.verdict, mine);
  }
  const auto& verdict = judged.verdict;
  if (!judged.outside.empty()) {
    // Unknown, never acted on: which of the job's nodes is slow cannot be told from timing
    // that names others.
    Finding f = make_finding("job:" + w.label, w.label, "timing-unreadable", Severity::Unknown,
                             "per-rank timing of " + w.label + " names nodes the task is not on");
    std::vector<std::string> named = judged.outside;
    named.resize(std::min<std::size_t>(named.size(), 8));
    std::string names = join(named, ", ");
    if (judged.outside.size() > named.size())
      names += " and " + std::to_string(judged.outside.size() - named.size()) + " more";
    f.evidence.push_back(names + ": not in the task's nodes (" +
                         (allocation.empty() ? std::string("none known") : allocation) + ")");
    f.evidence.push_back(
        "the helper names a rank's node by SLURMD_NODENAME, else its host name: a host name "
        "that is not the node's Slurm name is not the node");
    out.push_back(std::move(f));
    return out;
  }
  const std::vector<NodeSpeed>& nodes = verdict->nodes;
  // Timing no longer written (a full disk, the helper switched off, a run between phases) says
  // nothing of the nodes now: neither named nor evicted on, nor shown as their speed.
  // The verdict's longest window, worked out once: not a walk over every node every cycle.
  if (w.timing->written > 0 &&
      now - w.timing->written > std::max(kTimingStaleAfter, 2 * verdict->window_s)) {
    // Said, not silent: slow-node judging is off for this run until its timing is fresh again.
    // The age is by the trainer's clock (the helper's ts), so a node whose clock is behind
    // llmwatch's by more than the limit looks the same: the finding names both. Info: nothing
    // acts on it, and no alert is sent.
    Finding f =
        make_finding("job:" + w.label, w.label, "timing-stale", Severity::Info,
                     "per-rank timing of " + w.label + " last written " +
                         format_duration(Seconds(static_cast<long long>(now - w.timing->written))) +
                         " ago: its nodes are not judged for speed until it is written again");
    f.evidence.push_back(
        "the age is by the writer's clock: a node clock behind llmwatch's by "
        "as much reads the same");
    out.push_back(std::move(f));
    return out;
  }
  const std::size_t shown = std::min(nodes.size(), kNodesShown);
  w.speeds = verdict;
  w.speeds_shown = shown_in_views(nodes, shown, settings.slow_below);
  if (nodes.empty() || !nodes.front().suspect) return out;
  // What its GPUs did over the slow window, against the job's other nodes' GPUs.
  NodeSpeed suspect = nodes.front();  // a copy: its GPU cause is this cycle's
  TelemetryEvidence gpus = gpu_evidence(store, *verdict, suspect, now);
  suspect.gpu_cause = gpus.cause;
  w.straggler = suspect;
  Finding f = straggler_finding(w.label, suspect);
  for (std::size_t i = 1; i < shown; ++i) f.evidence.push_back(straggler_summary(nodes[i]));
  if (verdict->judged() > shown)
    f.evidence.push_back("and " + std::to_string(verdict->judged() - shown) +
                         " more nodes, each at least as fast as " + nodes[shown - 1].node);
  f.evidence.insert(f.evidence.end(), gpus.lines.begin(), gpus.lines.end());
  // What the fleet says of it: a [[check]] figure far under the fleet's (fleet_compare).
  for (const auto& row : store.firing())
    if (row.key.rfind("node:" + suspect.node + "/fleet-slow", 0) == 0)
      f.evidence.push_back(row.summary);
  // What the node itself says: its last node-check (ECC, Xids, PCIe width).
  if (auto health = store.node_health(suspect.node))
    f.evidence.push_back(suspect.node + " node-check: " + health->summary());
  if (w.timing->placed_by_layout)
    f.evidence.push_back("ranks placed on nodes by block layout (the log names no hosts)");
  w.eviction = judge_eviction(eviction_case(w, store, suspect.relative, now));
  // A node named by layout alone is evicted only when its own GPUs back the finding: a cyclic
  // layout would otherwise drain a healthy node.
  if (w.timing->placed_by_layout && gpus.cause.empty() && w.eviction->evict) {
    w.eviction->evict = false;
    w.eviction->text = "keep" + w.eviction->text.substr(std::string_view("evict").size()) +
                       "; but its ranks were placed by layout and its GPUs show no cause";
  }
  // The alert states the sum, whichever on_straggler says: what staying costs, what leaving does.
  f.summary += "; " + w.eviction->text;
  out.push_back(std::move(f));
  return out;
}

}  // namespace llmwatch
