#include "rules/rank_exit.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace llmwatch {
namespace {

RankExit unknown(std::string why) {
  return {RankSeen::Unknown, std::move(why)};
}

}  // namespace

RankExit rank_exit(const std::vector<NodeRanks>& answers,
                   const std::vector<std::string>& task_nodes, int rank, bool srun_task) {
  if (task_nodes.empty()) return unknown("no node to look on");
  // Every node of the task, each in full, and none twice (two answers for one node: which?).
  std::set<std::string> answered;
  for (const auto& a : answers) {
    if (!a.whole) return unknown(a.node + "'s answer was cut or garbled");
    if (!answered.insert(a.node).second) return unknown(a.node + " answered twice");
  }
  for (const auto& node : task_nodes)
    if (!answered.count(node)) return unknown(node + " did not answer");
  for (const auto& node : answered)
    if (std::find(task_nodes.begin(), task_nodes.end(), node) == task_nodes.end())
      return unknown(node + " answered but is not the task's");
  // Whose names count: RANK where any process has it (torchrun's agent has SLURM_PROCID only,
  // and shares it with its node's workers); SLURM_PROCID for srun's label, or where no process
  // names a RANK.
  bool any_rank = false;
  for (const auto& a : answers)
    for (const auto& p : a.processes) any_rank |= p.by == "RANK";
  const std::string by = srun_task || !any_rank ? "SLURM_PROCID" : "RANK";
  // A rank's own children (DataLoader workers, compile workers) carry its environment: the
  // rank is the one of them whose parent is not a process of the same name on that node.
  std::set<std::tuple<std::string, int, int>> named;  // (node, pid, rank)
  for (const auto& a : answers)
    for (const auto& p : a.processes)
      if (p.by == by) named.insert({a.node, p.pid, p.rank});
  int world = -1;
  std::set<int> seen;
  std::string where;    // the printing rank's node, when it is there
  std::string exiting;  // and the frame that says its process is on its way out
  for (const auto& a : answers)
    for (const auto& p : a.processes) {
      if (p.by != by || named.count({a.node, p.ppid, p.rank})) continue;
      if (p.rank < 0 || p.world <= 0 || p.rank >= p.world)
        return unknown("pid " + std::to_string(p.pid) + " on " + a.node + " names no usable " + by);
      if (world >= 0 && p.world != world) return unknown("the ranks name different world sizes");
      world = p.world;
      if (!seen.insert(p.rank).second)
        return unknown(by + " " + std::to_string(p.rank) + " is named by two processes");
      if (p.rank == rank) where = a.node + " pid " + std::to_string(p.pid), exiting = p.exiting;
    }
  if (world < 0) return unknown("no process names its " + by);
  if (rank >= world) return unknown("rank " + std::to_string(rank) + " is past the world size");
  const std::string kind = by == "RANK" ? "rank " : "task ";
  // Its program has ended (an exception raised to the top, sys.exit) and it lingers in its
  // exit: no step comes from it, whatever its thread joins or destructors wait for.
  if (!where.empty() && !exiting.empty())
    return {RankSeen::Ended, kind + std::to_string(rank) + "'s process is exiting (" + exiting +
                                 " on its main thread, " + where + "); its program has ended"};
  if (!where.empty())
    return {RankSeen::Running, kind + std::to_string(rank) + "'s process runs (" + where + ")"};
  const int others = world - 1;
  if (rank < 0 && static_cast<int>(seen.size()) == world)
    return {RankSeen::Running,
            "every one of the " + std::to_string(world) + " ranks' processes runs"};
  if (static_cast<int>(seen.size()) != others)
    return unknown(std::to_string(world - static_cast<int>(seen.size())) + " of " +
                   std::to_string(world) + " ranks not found");
  // A line no prefix names: the one rank missing, whichever it is (its peers wait on it).
  if (rank < 0)
    while (seen.count(++rank)) {
    }
  const std::string who = kind + std::to_string(rank);
  return {RankSeen::Ended, who + "'s process has ended; the other " + std::to_string(others) +
                               (others == 1 ? " rank still runs" : " ranks still run") + " (all " +
                               std::to_string(task_nodes.size()) +
                               (task_nodes.size() == 1 ? " node" : " nodes") + " answered)"};
}

}  // namespace llmwatch
