#include "rules/rank_exit.h"

#include <algorithm>
#include <set>
#include <utility>

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
  int world = -1;
  std::set<int> seen;
  std::string where;    // the printing rank's node, when it is there
  std::string exiting;  // and the frame that says its process is on its way out
  std::vector<std::pair<int, std::string>> exiting_ranks;  // every rank seen so: rank, "why"
  for (const auto& a : answers)
    for (const auto& p : a.processes) {
      if (!own_rank_process(a.processes, p, by)) continue;
      if (p.rank < 0 || p.world <= 0 || p.rank >= p.world)
        return unknown("pid " + std::to_string(p.pid) + " on " + a.node + " names no usable " + by);
      if (world >= 0 && p.world != world) return unknown("the ranks name different world sizes");
      world = p.world;
      if (!seen.insert(p.rank).second)
        return unknown(by + " " + std::to_string(p.rank) + " is named by two processes");
      const std::string here = a.node + " pid " + std::to_string(p.pid);
      if (p.rank == rank) where = here, exiting = p.exiting;
      if (!p.exiting.empty())
        exiting_ranks.push_back({p.rank, p.exiting + " on its main thread, " + here});
    }
  if (world < 0) return unknown("no process names its " + by);
  if (rank >= world) return unknown("rank " + std::to_string(rank) + " is past the world size");
  const std::string kind = by == "RANK" ? "rank " : "task ";
  const int others = world - 1;
  const std::string others_run = "the other " + std::to_string(others) +
                                 (others == 1 ? " rank still runs" : " ranks still run") +
                                 " (all " + std::to_string(task_nodes.size()) +
                                 (task_nodes.size() == 1 ? " node" : " nodes") + " answered)";
  // Its program has ended (an exception raised to the top, sys.exit) and it lingers in its
  // exit: no step comes from it, whatever its thread joins or destructors wait for.
  auto is_exiting = [&](int r, const std::string& how) {
    return kind + std::to_string(r) + "'s process is exiting (" + how + "); its program has ended";
  };
  if (!where.empty() && !exiting.empty())
    return {RankSeen::Ended, is_exiting(rank, exiting + " on its main thread, " + where)};
  if (!where.empty())
    return {RankSeen::Running, kind + std::to_string(rank) + "'s process runs (" + where + ")"};
  const int gone = world - static_cast<int>(seen.size());
  if (rank < 0) {
    // A line no prefix names: the one rank that has ended, gone or exiting, whichever it is
    // (its peers wait on it). With more than one, the line may be a third's that goes on.
    const int ended = gone + static_cast<int>(exiting_ranks.size());
    if (ended == 0)
      return {RankSeen::Running,
              "every one of the " + std::to_string(world) + " ranks' processes runs"};
    if (ended > 1 && !exiting_ranks.empty())
      return unknown(std::to_string(ended) + " of " + std::to_string(world) +
                     " ranks have ended (" + std::to_string(exiting_ranks.size()) + " exiting, " +
                     std::to_string(gone) + " gone)");
    if (exiting_ranks.size() == 1)
      return {RankSeen::Ended,
              is_exiting(exiting_ranks[0].first, exiting_ranks[0].second) + "; " + others_run};
  }
  if (gone != 1)
    return unknown(std::to_string(gone) + " of " + std::to_string(world) + " ranks not found");
  if (rank < 0)
    while (seen.count(++rank)) {
    }
  return {RankSeen::Ended, kind + std::to_string(rank) + "'s process has ended; " + others_run};
}

}  // namespace llmwatch
