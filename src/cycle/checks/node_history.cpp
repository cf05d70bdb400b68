#include "cycle/checks/node_history.h"

#include <algorithm>

#include "rules/fleet_figures.h"
#include "slurm/hostlist.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"

namespace llmwatch {

std::vector<WatchedTask> running_tasks(const std::vector<JobWork>& work) {
  std::vector<WatchedTask> out;
  for (const auto& w : work)
    if (w.obs.running) out.push_back({w.label, *w.obs.running});
  return out;
}

std::set<std::string> watched_nodes(const std::vector<WatchedTask>& running) {
  std::set<std::string> out;
  for (const auto& w : running)
    for (auto& h : hosts_in(w.task.nodes)) out.insert(std::move(h));
  return out;
}

namespace {

// Whether the report holds a problem (a check or GPU warning or failing) that the node's last
// fresh report did not: an incident for the lemon rule. The same warning read again with a new
// figure in its words is none (a site check's "91.2% used", a warm GPU's degrees: each check
// was an incident, and three drained a node that was only warm). A node first seen since the
// problems were kept counts as before: by a change of its headline.
bool begins_a_problem(Store& store, const std::string& node, const NodeReport& r,
                      bool headline_changed) {
  // A healthy node that was healthy before (its summary, verdict included, is unchanged) has
  // no problem and had none: most nodes, every cycle, with no lookup.
  if (!headline_changed && r.verdict == Verdict::Ok) return false;
  const std::string key = kv::node_problems(node);
  std::optional<std::string> before = store.get(key);
  std::vector<std::string> had = before ? split(*before, '\n') : std::vector<std::string>{};
  std::vector<std::string> now = split(r.problems(), '\n');
  std::erase(had, std::string());
  std::erase(now, std::string());
  bool begins = false;
  for (const auto& problem : now) begins |= std::find(had.begin(), had.end(), problem) == had.end();
  // A report that could not look somewhere (an UNKNOWN item: nvidia-smi hung, dcgmi absent)
  // clears nothing it could not see: a warning is not over, nor begins again, for that.
  bool blind = std::any_of(r.items.begin(), r.items.end(),
                           [](const HealthItem& i) { return i.verdict == Verdict::Unknown; });
  std::vector<std::string> keep = now;
  if (blind) {
    keep.insert(keep.end(), had.begin(), had.end());
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  }
  std::string text;
  for (const auto& p : keep) text += (text.empty() ? "" : "\n") + p;
  if (!before || *before != text) store.put(key, text, r.ts);
  if (!before) return headline_changed && !now.empty();
  return begins;
}

}  // namespace

// One event per change of a node's fresh verdict or headline, and an incident per problem that
// begins; and each fresh report's GPU telemetry, in the node's series.
void record_history(Store& store, const NodeFacts& facts, Seconds max_age) {
  store.transaction([&] {
    for (const auto& [node, r] : facts.reports) {
      if (facts.now - r.ts > static_cast<double>(max_age.count())) continue;
      if (!r.figures.empty()) {
        std::string key = kv::node_figures(node);
        if (auto merged = merge_node_figures(store.get(key).value_or(""), r.figures, r.ts))
          store.put(key, *merged, facts.now);
      }
      if (!r.telemetry.empty() && facts.watched.count(node))
        store.add_telemetry_sample(node, {r.ts, r.telemetry});
      NodeHealth health{r.verdict, r.headline()};
      bool changed = store.put_node_health(node, health, facts.now);
      std::string sev = r.verdict == Verdict::Critical ? "critical"
                        : r.verdict == Verdict::Ok     ? "info"
                                                       : "warning";
      if (changed)
        store.add_event(facts.now, "node-health", node, sev, health.summary(), r.to_json());
      if (begins_a_problem(store, node, r, changed))
        store.add_event(facts.now, "incident", node, sev, "GPU health: " + r.headline());
    }
  });
}

}  // namespace llmwatch
