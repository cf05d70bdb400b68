#include "cycle/checks/node_history.h"

#include <cstdlib>
#include <map>

#include "rules/fleet_figures.h"
#include "slurm/hostlist.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"
#include "util/units.h"

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

// A problem seen again within this time of its last sighting is the same one: a temperature or
// a site check's figure that hovers at its threshold warns, clears and warns again at every
// other check.
constexpr double kSameProblemWithin = 3600;

// Whether the report holds a problem (a check or GPU warning or failing) that begins: one not
// seen on the node in the last kSameProblemWithin (a failure: since its last clean pass). That
// is an incident for the lemon rule. The same warning read again with a new figure in its words
// is none (a site check's "91.2% used", a warm GPU's degrees: each check was an incident, and
// three drained a node that was only warm), nor is one that flaps, nor one a check that could
// not look (UNKNOWN) lost sight of. A node first seen since the problems were kept counts as
// before: by a change of its headline.
bool begins_a_problem(Store& store, const std::string& node, const NodeReport& r,
                      bool headline_changed) {
  // A healthy node that was healthy before (its summary, verdict included, is unchanged) has
  // no problem and had none: most nodes, every cycle, with no lookup.
  if (!headline_changed && r.verdict == Verdict::Ok) return false;
  const std::string key = kv::node_problems(node);
  std::optional<std::string> before = store.get(key);
  // Each problem seen and when last: "<problem>\t<ts>" lines.
  std::map<std::string, double> seen;
  if (before)
    for (const auto& line : split(*before, '\n'))
      if (auto tab = line.rfind('\t'); tab != std::string::npos)
        seen[line.substr(0, tab)] = std::strtod(line.c_str() + tab + 1, nullptr);
  // A clean pass ends a failure: the next is a new one (a lemon fails again soon after its
  // repair). A warning's return within the hour is still the same warning.
  if (r.verdict == Verdict::Ok)
    std::erase_if(seen, [](const auto& p) { return p.first.ends_with(" CRITICAL"); });
  bool begins = false;
  for (const auto& problem : r.problems()) {
    auto it = seen.find(problem);
    if (it == seen.end() || !(r.ts - it->second <= kSameProblemWithin)) {
      begins = true;
      seen[problem] = r.ts;
    } else if (r.ts - it->second > 60) {
      it->second = r.ts;  // still seen (to the minute: a warning is not rewritten every check)
    }
  }
  std::string text;
  for (const auto& [problem, ts] : seen)
    if (r.ts - ts <= kSameProblemWithin)
      text += (text.empty() ? "" : "\n") + problem + "\t" + format_whole(ts);
  if (!before || *before != text) store.put(key, text, r.ts);
  return begins && (before || headline_changed);
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
