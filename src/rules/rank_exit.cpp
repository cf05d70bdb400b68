#include "rules/rank_exit.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace llmwatch {
namespace {

RankExit unknown(std::string why) {
  return {RankSeen::Unknown, std::move(why)};
}

// A rank's own process, as a node's whole answer listed it.
struct OwnProcess {
  std::string node;
  int pid = 0, ppid = 0;
  std::string exiting;
  std::string step;  // "" where not known
  std::string here() const { return node + " pid " + std::to_string(pid); }
};

// Every rank's own process by the variable `by`, and the world they agree on; `why` says what
// makes it unusable (a rank named twice, world sizes that differ), empty where it is whole.
struct Census {
  std::string why;
  int world = -1;
  std::map<int, OwnProcess> ranks;
  int gone() const { return world - static_cast<int>(ranks.size()); }
  std::vector<std::pair<int, const OwnProcess*>> exiting() const {
    std::vector<std::pair<int, const OwnProcess*>> out;
    for (const auto& [rank, p] : ranks)
      if (!p.exiting.empty()) out.push_back({rank, &p});
    return out;
  }
};

Census census(const std::vector<NodeRanks>& answers, const std::string& by) {
  Census c;
  // A rank's own children (DataLoader workers, compile workers) carry its environment: the
  // rank is the one of them whose parent is not a process of the same name on that node.
  for (const auto& a : answers)
    for (const auto& p : a.processes) {
      if (!own_rank_process(a.processes, p, by)) continue;
      if (p.rank < 0 || p.world <= 0 || p.rank >= p.world) {
        c.why = "pid " + std::to_string(p.pid) + " on " + a.node + " names no usable " + by;
        return c;
      }
      if (c.world >= 0 && p.world != c.world) {
        c.why = "the ranks name different world sizes";
        return c;
      }
      c.world = p.world;
      if (!c.ranks.emplace(p.rank, OwnProcess{a.node, p.pid, p.ppid, p.exiting, p.step}).second) {
        c.why = by + " " + std::to_string(p.rank) + " is named by two processes";
        return c;
      }
    }
  if (c.world < 0) c.why = "no process names its " + by;
  return c;
}

// A process of the job's that is none of its ranks nor one's worker (it names no rank by `by`):
// a launcher such as torchrun's elastic agent, which may be starting ranks it ended again;
// "" where there is none (srun started every rank). By the job's variable, not each node's
// (process_role's): on a node whose workers are all gone no process names a RANK, and by that
// node's variable its agent would be its rank. One exiting starts nothing: a rank whose exit
// is under way in the kernel names no rank (its memory, its environment with it, is gone).
// Nor does one in another step than every rank still there: an agent restarts its workers in
// its own step, and while the ranks' step runs no other step starts its tasks again (a Python
// launcher in the batch script waits on srun). `elsewhere`: such a process was passed over.
std::string launcher(const std::vector<NodeRanks>& answers, const std::string& by, const Census& c,
                     bool& elsewhere) {
  std::set<std::string> steps;
  bool every_step_known = !c.ranks.empty();
  for (const auto& [rank, p] : c.ranks) {
    every_step_known &= !p.step.empty();
    steps.insert(p.step);
  }
  elsewhere = false;
  for (const auto& a : answers)
    for (const auto& p : a.processes) {
      if (p.by == by || !p.exiting.empty()) continue;
      if (every_step_known && !p.step.empty() && !steps.count(p.step)) {
        elsewhere = true;
        continue;
      }
      return a.node + " pid " + std::to_string(p.pid) + " (" +
             (p.by.empty() ? "no rank" : p.by + " " + std::to_string(p.rank)) + ")";
    }
  return "";
}

// What else the look saw, after the rank it names: how many ended where more than that one
// did, and that the rest still run ("; 2 of 8 ranks have ended (2 exiting, 0 gone); the other
// 6 ranks still run (all 2 nodes answered)").
std::string and_the_rest(int world, std::size_t nodes, std::size_t exiting, int gone) {
  const int ended = static_cast<int>(exiting) + gone, others = world - ended;
  std::string out;
  if (ended > 1)
    out = "; " + std::to_string(ended) + " of " + std::to_string(world) + " ranks have ended (" +
          std::to_string(exiting) + " exiting, " + std::to_string(gone) + " gone)";
  return out + "; the other " + std::to_string(others) +
         (others == 1 ? " rank still runs" : " ranks still run") + " (all " +
         std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") + " answered)";
}

// Its program has ended (an exception raised to the top, sys.exit) and it lingers in its exit:
// no step comes from it, whatever its thread joins or destructors wait for.
// Its exit is seen in gdb's backtrace of its main thread (probes/process_exit.h) or, as
// do_exit or do_coredump, in the kernel (probes/kernel_exit.h).
std::string is_exiting(const std::string& who, const OwnProcess& p, const std::string& under = "") {
  const bool kernel = p.exiting.rfind("do_", 0) == 0;
  return who + "'s process is exiting (" + p.exiting +
         (kernel ? " in the kernel, " : " on its main thread, ") + p.here() + ")" + under +
         "; its program has ended";
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
  const bool any_rank = std::any_of(answers.begin(), answers.end(), [](const NodeRanks& a) {
    return rank_variable(a.processes, false) == "RANK";
  });
  const std::string by = srun_task || !any_rank ? "SLURM_PROCID" : "RANK";
  const Census c = census(answers, by);
  if (!c.why.empty()) return unknown(c.why);
  if (rank >= c.world) return unknown("rank " + std::to_string(rank) + " is past the world size");
  const std::string kind = by == "RANK" ? "rank " : "task ";
  const auto exiting = c.exiting();
  if (auto it = c.ranks.find(rank); it != c.ranks.end()) {
    const std::string who = kind + std::to_string(rank);
    const OwnProcess& own = it->second;
    if (!own.exiting.empty()) return {RankSeen::Ended, is_exiting(who, own)};
    // srun's label over torchrun names the node's agent, which runs while a worker of its
    // lingers in its exit: that worker is the line's where it is the one rank ended and the
    // agent's own child (its node asked about the agent's workers too).
    if (srun_task && any_rank) {
      const Census workers = census(answers, "RANK");
      const auto ended = workers.exiting();
      const auto mine = std::find_if(ended.begin(), ended.end(), [&](const auto& e) {
        return e.second->node == own.node && e.second->ppid == own.pid;
      });
      if (workers.why.empty() && workers.gone() == 0 && mine != ended.end())
        return {RankSeen::Ended,
                is_exiting("rank " + std::to_string(mine->first), *mine->second,
                           ", a worker of " + who + " (" + own.here() + ")") +
                    and_the_rest(workers.world, task_nodes.size(), ended.size(), 0)};
    }
    return {RankSeen::Running, who + "'s process runs (" + own.here() + ")"};
  }
  const int gone = c.gone();
  if (rank < 0) {
    // A line no prefix names: a rank whose program has ended, exiting, or a rank gone (its
    // peers wait on it). Several exiting, as after a network error every rank on both ends of
    // the failed link raises: their programs have ended whichever printed the line, and ranks
    // that step together take no step without them. Several gone and none exiting: below.
    const int ended = gone + static_cast<int>(exiting.size());
    if (ended == 0)
      return {RankSeen::Running,
              "every one of the " + std::to_string(c.world) + " ranks' processes runs"};
    if (!exiting.empty())
      return {RankSeen::Ended,
              is_exiting(kind + std::to_string(exiting[0].first), *exiting[0].second) +
                  and_the_rest(c.world, task_nodes.size(), exiting.size(), gone)};
  }
  // Several gone and none exiting: an elastic agent restarting its workers ends them all at
  // once, and they come back; where the job has no process but its ranks (srun started each),
  // nothing is left to start them again, and they have ended as one gone has.
  // (Here at least one is gone: the rank named is not among the processes, or none was named
  // and none is exiting, and not all run.)
  bool elsewhere = false;
  const std::string again = gone > 1 ? launcher(answers, by, c, elsewhere) : "";
  if (!again.empty())
    return unknown(std::to_string(gone) + " of " + std::to_string(c.world) + " ranks not found; " +
                   again + " may be starting them again");
  if (rank < 0)
    while (c.ranks.count(++rank)) {
    }
  return {RankSeen::Ended,
          kind + std::to_string(rank) + "'s process has ended" +
              (gone <= 1   ? ""
               : elsewhere ? " (its step has no process but its ranks to start it again)"
                           : " (the job has no process but its ranks to start it again)") +
              and_the_rest(c.world, task_nodes.size(), exiting.size(), gone)};
}

}  // namespace llmwatch
