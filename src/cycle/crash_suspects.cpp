#include "cycle/crash_suspects.h"

#include <set>

#include "slurm/hostlist.h"
#include "slurm/slurm_node.h"

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

}  // namespace llmwatch
