#include "cycle/crash_suspects.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "slurm/hostlist.h"
#include "slurm/slurm_node.h"
#include "store/store.h"
#include "util/units.h"

namespace llmwatch {

std::vector<Suspect> crash_suspects(const CycleState& s, const JobWork& w) {
  const auto& t = w.obs.running ? w.obs.running : w.last;
  if (!t) return {};
  TaskLayout layout;
  layout.nodes = hosts_in(t->nodes);
  // The peer an NCCL error names, by the NodeAddr this cycle's sinfo gave (no RPC): else the
  // ranks that report a failed completion from it would be all the log blames.
  if (s.nodes_ok()) {
    std::set<std::string> mine(layout.nodes.begin(), layout.nodes.end());
    std::vector<std::pair<std::string, std::string>> node_addrs;
    for (const auto& n : s.nodes->nodes)
      if (mine.count(n.name)) node_addrs.emplace_back(n.name, n.address);
    layout.address_to_node = nodes_by_address(node_addrs);
  }
  std::vector<std::string> lines(w.progress.recent.begin(), w.progress.recent.end());
  return attribute_crash(lines, layout, w.troubles);
}

namespace {

// Incidents within lemon_window that keep a node out of restarts (ledger_suspects).
constexpr int kLedgerIncidents = 2;

int ledger_threshold(const CycleState& s) {
  return s.config.gpu.lemon_failures <= 0 ? 0
                                          : std::min(kLedgerIncidents, s.config.gpu.lemon_failures);
}

double ledger_window_start(const CycleState& s) {
  return s.now - static_cast<double>(s.config.gpu.lemon_window.count());
}

}  // namespace

std::vector<Suspect> ledger_suspects(const CycleState& s) {
  std::vector<Suspect> out;
  const int threshold = ledger_threshold(s);
  if (threshold == 0) return out;
  for (const auto& [node, n] : s.store.incident_counts(ledger_window_start(s)))
    if (n >= threshold)
      out.push_back(
          {node,
           0.5,
           {std::to_string(n) + " incidents in " + format_duration(s.config.gpu.lemon_window)}});
  return out;
}

std::vector<std::string> ledger_suspects_since(const CycleState& s, double since) {
  std::vector<std::string> out;
  const int threshold = ledger_threshold(s);
  if (threshold == 0) return out;
  // Charged after `since`: an incident of the cycle that queued the restart has its time.
  const auto after =
      s.store.incident_counts(std::nextafter(since, std::numeric_limits<double>::infinity()));
  for (const auto& [node, n] : s.store.incident_counts(ledger_window_start(s))) {
    auto later = after.find(node);
    if (n >= threshold && later != after.end() && n - later->second < threshold)
      out.push_back(node);
  }
  return out;
}

}  // namespace llmwatch
