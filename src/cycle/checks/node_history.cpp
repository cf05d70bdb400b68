#include "cycle/checks/node_history.h"

#include "rules/fleet_figures.h"
#include "slurm/hostlist.h"
#include "store/keys.h"
#include "store/store.h"

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

// One event per change of a node's fresh verdict or headline; and each fresh report's GPU
// telemetry, in the node's series.
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
      if (!store.put_node_health(node, health, facts.now)) continue;
      std::string summary = health.summary();
      std::string sev = r.verdict == Verdict::Critical ? "critical"
                        : r.verdict == Verdict::Ok     ? "info"
                                                       : "warning";
      store.add_event(facts.now, "node-health", node, sev, summary, r.to_json());
      if (r.verdict == Verdict::Critical || r.verdict == Verdict::Warn)
        store.add_event(facts.now, "incident", node, sev, "GPU health: " + r.headline());
    }
  });
}

}  // namespace llmwatch
