// Whether the rank that printed a fatal line has ended while its task runs on (#30): said only
// on whole evidence, since it shortens the run's allowance.
#include "rules/rank_exit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>

#include "test_util.h"

namespace llmwatch {
namespace {

// A job of `world` ranks, `per_node` a node on node-1.., launched by srun (SLURM_PROCID) or
// torchrun (RANK, with an agent per node that has only SLURM_PROCID), each rank with a
// DataLoader worker (its child, with its environment) where `workers`.
std::vector<NodeRanks> job(int world, int per_node, bool torchrun, bool workers) {
  std::vector<NodeRanks> out;
  int pid = 1000;
  for (int r = 0; r < world; ++r) {
    const int node = r / per_node;
    if (static_cast<int>(out.size()) <= node) {
      out.push_back({"node-" + std::to_string(node + 1), {}, true});
      if (torchrun)
        out.back().processes.push_back({++pid, 1, node, world / per_node, "SLURM_PROCID"});
    }
    const int parent = torchrun ? out.back().processes.front().pid : 1;
    const int me = ++pid;
    out.back().processes.push_back({me, parent, r, world, torchrun ? "RANK" : "SLURM_PROCID"});
    if (workers)
      out.back().processes.push_back({++pid, me, r, world, torchrun ? "RANK" : "SLURM_PROCID"});
  }
  return out;
}

std::vector<std::string> nodes_of(const std::vector<NodeRanks>& answers) {
  std::vector<std::string> out;
  for (const auto& a : answers) out.push_back(a.node);
  return out;
}

// The pid of rank `r`'s own process by the variable `by` (its children carry its rank too).
int own_pid(const std::vector<NodeRanks>& answers, int r, const std::string& by) {
  for (const auto& a : answers)
    for (const auto& p : a.processes)
      if (p.rank == r && p.by == by &&
          std::none_of(a.processes.begin(), a.processes.end(), [&](const RankProcess& q) {
            return q.pid == p.ppid && q.rank == r && q.by == by;
          }))
        return p.pid;
  throw std::runtime_error("no own process of rank " + std::to_string(r));
}

// Rank `r`'s own process (and its children) gone.
void end_rank(std::vector<NodeRanks>& answers, int r) {
  for (auto& a : answers)
    a.processes.erase(
        std::remove_if(a.processes.begin(), a.processes.end(),
                       [&](const RankProcess& p) { return p.rank == r && p.by != "SLURM_PROCID"; }),
        a.processes.end());
}

void end_task(std::vector<NodeRanks>& answers, int r) {
  for (auto& a : answers)
    a.processes.erase(std::remove_if(a.processes.begin(), a.processes.end(),
                                     [&](const RankProcess& p) { return p.rank == r; }),
                      a.processes.end());
}

TEST(RankExit, ARankGoneWhileEveryOtherRunsHasEnded) {
  for (bool workers : {false, true}) {
    auto srun = job(8, 4, false, workers);
    const auto nodes = nodes_of(srun);
    EXPECT_EQ(rank_exit(srun, nodes, 5, false).seen, RankSeen::Running);
    end_task(srun, 5);
    auto v = rank_exit(srun, nodes, 5, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_EQ(v.why,
              "task 5's process has ended; the other 7 ranks still run (all 2 nodes answered)");
    // srun's label names the same task.
    EXPECT_EQ(rank_exit(srun, nodes, 5, true).seen, RankSeen::Ended);
    // A line no prefix named: the one rank missing.
    v = rank_exit(srun, nodes, -1, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_NE(v.why.find("task 5's"), std::string::npos) << v.why;

    auto torch = job(8, 4, true, workers);
    EXPECT_EQ(rank_exit(torch, nodes, 5, false).seen, RankSeen::Running);
    EXPECT_EQ(rank_exit(torch, nodes, -1, false).seen, RankSeen::Running);
    end_rank(torch, 5);
    v = rank_exit(torch, nodes, 5, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_NE(v.why.find("rank 5's"), std::string::npos) << v.why;
    // srun's label over torchrun names the node's agent (its SLURM_PROCID), which runs on.
    EXPECT_EQ(rank_exit(torch, nodes, 1, true).seen, RankSeen::Running);
  }
}

// Its process there, but exiting (its program ended; it lingers in a thread
// join or a destructor): ended as well. Seen on another process, or with the evidence less than
// whole, it changes nothing.
TEST(RankExit, ARankWhoseProcessIsExitingHasEnded) {
  for (bool torchrun : {false, true}) {
    auto answers = job(8, 4, torchrun, true);
    const auto nodes = nodes_of(answers);
    auto own = [&](int rank) -> RankProcess& {
      for (auto& a : answers)
        for (auto& p : a.processes)
          if (p.rank == rank && p.by == (torchrun ? "RANK" : "SLURM_PROCID")) return p;
      throw std::logic_error("no such rank");
    };
    own(5).exiting = "Py_FinalizeEx";
    auto v = rank_exit(answers, nodes, 5, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_EQ(v.why, std::string(torchrun ? "rank" : "task") + " 5's process is exiting " +
                         "(Py_FinalizeEx on its main thread, node-2 pid " +
                         std::to_string(own(5).pid) + "); its program has ended");
    // The line named another rank, which runs.
    EXPECT_EQ(rank_exit(answers, nodes, 4, false).seen, RankSeen::Running);
    // A line no prefix named: the one rank whose process is exiting, every other running.
    v = rank_exit(answers, nodes, -1, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_EQ(v.why, std::string(torchrun ? "rank" : "task") + " 5's process is exiting " +
                         "(Py_FinalizeEx on its main thread, node-2 pid " +
                         std::to_string(own(5).pid) +
                         "); its program has ended; the other 7 ranks still run (all 2 nodes "
                         "answered)");
    // Less than whole evidence: unknown, exiting or not.
    auto cut = answers;
    cut[0].whole = false;
    EXPECT_EQ(rank_exit(cut, nodes, 5, false).seen, RankSeen::Unknown);
    EXPECT_EQ(rank_exit({answers[1]}, nodes, 5, false).seen, RankSeen::Unknown);
  }
}

// A line no prefix named (a log without rank prefixes, the most common form): its rank is the
// one whose process is exiting, only where it is the one rank ended. On the code before, every
// process there meant "running" whatever each was doing.
TEST(RankExit, ALineNamingNoRankEndsTheOneRankSeenExiting) {
  for (bool torchrun : {false, true}) {
    const std::string by = torchrun ? "RANK" : "SLURM_PROCID";
    const auto base = job(8, 4, torchrun, true);
    const auto nodes = nodes_of(base);
    auto exiting = [&](std::vector<NodeRanks> answers, std::vector<int> ranks, bool own) {
      for (auto& a : answers)
        for (auto& p : a.processes) {
          const bool worker = std::any_of(
              a.processes.begin(), a.processes.end(),
              [&](const RankProcess& q) { return q.pid == p.ppid && q.rank == p.rank; });
          if (p.by == by && worker != own &&
              std::find(ranks.begin(), ranks.end(), p.rank) != ranks.end())
            p.exiting = "exit";
        }
      return answers;
    };
    auto v = rank_exit(exiting(base, {6}, true), nodes, -1, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_EQ(
        v.why.rfind((torchrun ? "rank" : "task") + std::string(" 6's process is exiting (exit"), 0),
        0u)
        << v.why;
    // A DataLoader worker exiting is not its rank: every rank runs.
    v = rank_exit(exiting(base, {6}, false), nodes, -1, false);
    EXPECT_EQ(v.seen, RankSeen::Running) << v.why;
    // Two ranks ended, two exiting or one exiting and one gone (the ranks on both ends of a
    // failed link raise): whichever printed the line, programs have ended that the rest step
    // with. On the code before, unknown: the run waited its two step intervals.
    // What the rule says of `answers`: ended, first of `first`, exiting on `node`.
    auto expect_ended = [&](const std::vector<NodeRanks>& answers, int first,
                            const std::string& node, const std::string& how) {
      const auto said = rank_exit(answers, nodes, -1, false);
      EXPECT_EQ(said.seen, RankSeen::Ended) << said.why;
      EXPECT_EQ(said.why, (torchrun ? "rank " : "task ") + std::to_string(first) +
                              "'s process is exiting (exit on its main thread, " + node + " pid " +
                              std::to_string(own_pid(answers, first, by)) +
                              "); its program has ended; 2 of 8 ranks have ended (" + how +
                              "); the other 6 ranks still run (all 2 nodes answered)");
    };
    expect_ended(exiting(base, {2, 6}, true), 2, "node-1", "2 exiting, 0 gone");
    auto one_gone = exiting(base, {6}, true);
    torchrun ? end_rank(one_gone, 1) : end_task(one_gone, 1);
    expect_ended(one_gone, 6, "node-2", "1 exiting, 1 gone");
    // Two gone and none exiting. Under torchrun, an elastic agent restarting its workers ends
    // them all at once, and they come back: unknown. Started by srun, nothing is left to start
    // them again: ended (on the code before, unknown as well).
    auto two_gone = base;
    for (int r : {1, 6}) torchrun ? end_rank(two_gone, r) : end_task(two_gone, r);
    v = rank_exit(two_gone, nodes, -1, false);
    if (torchrun) {
      EXPECT_EQ(v.seen, RankSeen::Unknown) << v.why;
      EXPECT_EQ(v.why,
                "2 of 8 ranks not found; node-1 pid 1001 (SLURM_PROCID 0) may be starting "
                "them again");
    } else {
      EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
      EXPECT_EQ(v.why,
                "task 1's process has ended (the job has no process but its ranks to start it "
                "again); 2 of 8 ranks have ended (0 exiting, 2 gone); the other 6 ranks still run "
                "(all 2 nodes answered)");
    }
    // Seen on less than every node's whole answer: unknown.
    auto cut = exiting(base, {6}, true);
    cut[0].whole = false;
    EXPECT_EQ(rank_exit(cut, nodes, -1, false).seen, RankSeen::Unknown);
  }
}

// A line naming a rank that is gone with others (srun started each rank, with
// --kill-on-bad-exit=0 the step runs on while its peers wait): nothing is left to start them
// again, so the named rank has ended. Beside torchrun's agents, which restart their workers
// all at once, unknown. On the code before, unknown in both.
TEST(RankExit, SeveralRanksGoneWithNothingToStartThemAgainHaveEnded) {
  for (int per_node : {1, 4}) {
    auto srun = job(8, per_node, false, true);
    for (int r : {2, 5, 7}) end_task(srun, r);
    auto v = rank_exit(srun, nodes_of(srun), 5, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_EQ(v.why.substr(0, v.why.find(';')),
              "task 5's process has ended (the job has no process but its ranks to start it "
              "again)");
    EXPECT_NE(v.why.find("; 3 of 8 ranks have ended (0 exiting, 3 gone); the other 5 ranks"),
              std::string::npos)
        << v.why;
    // Named by srun's label: the same.
    EXPECT_EQ(rank_exit(srun, nodes_of(srun), 5, true).seen, RankSeen::Ended);
    // The named rank runs: running, whoever else is gone.
    EXPECT_EQ(rank_exit(srun, nodes_of(srun), 3, false).seen, RankSeen::Running);
    auto torchrun = job(8, per_node, true, true);
    for (int r : {2, 5, 7}) end_rank(torchrun, r);
    v = rank_exit(torchrun, nodes_of(torchrun), 5, false);
    EXPECT_EQ(v.seen, RankSeen::Unknown) << v.why;
    EXPECT_NE(v.why.find("may be starting them again"), std::string::npos) << v.why;
  }
}

// Ranks on both ends of a failed link exit, and the kernel takes seconds to tear down their
// CUDA contexts: meanwhile, where slurmd still lists them, each is listed by its command name
// (python3) but its memory, its environment with it, is gone, so it names no rank. It is no
// launcher: nothing starts the ranks again. On the code before, unknown: "node-1 pid 2001 (no rank)
// may be starting them again". A process of no rank that runs (a helper of the job's own) still
// leaves it unknown.
TEST(RankExit, RanksWhoseExitIsUnderWayInTheKernelAreNoLauncher) {
  auto srun = job(8, 4, false, true);
  const auto nodes = nodes_of(srun);
  for (int r : {2, 5}) {
    end_task(srun, r);
    srun[r / 4].processes.push_back({2000 + r, 1, -1, -1, "", "do_exit"});
  }
  for (int named : {5, -1}) {
    auto v = rank_exit(srun, nodes, named, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_NE(v.why.find("(the job has no process but its ranks to start it again); 2 of 8 ranks "
                         "have ended (0 exiting, 2 gone)"),
              std::string::npos)
        << v.why;
  }
  srun[0].processes.push_back({3000, 1, -1, -1, ""});
  auto v = rank_exit(srun, nodes, 5, false);
  EXPECT_EQ(v.seen, RankSeen::Unknown) << v.why;
  EXPECT_NE(v.why.find("node-1 pid 3000 (no rank) may be starting them again"), std::string::npos)
      << v.why;
}

// A Python launcher in the batch script, waiting on the srun step that started the ranks: a
// process of another step than theirs, which starts none of them again while their step runs
// (an elastic agent restarts its workers in its own step). Two ranks of that step gone: ended.
// With no steps known (an answer from before stop 83), or the launcher in the ranks' step, it
// may be starting them again: unknown, as before.
TEST(RankExit, ALauncherInAnotherStepStartsNoRankAgain) {
  auto srun = job(8, 4, false, true);
  const auto nodes = nodes_of(srun);
  for (auto& a : srun)
    for (auto& p : a.processes) p.step = "0";
  RankProcess launcher{900, 1, -1, -1, ""};
  launcher.step = "batch";
  srun[0].processes.push_back(launcher);
  for (int r : {2, 5}) end_task(srun, r);
  for (int named : {5, -1}) {
    auto v = rank_exit(srun, nodes, named, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_NE(v.why.find("(its step has no process but its ranks to start it again); 2 of 8"),
              std::string::npos)
        << v.why;
  }
  for (const std::string& step : {std::string("0"), std::string("")}) {
    auto unsure = srun;
    unsure[0].processes.back().step = step;
    auto v = rank_exit(unsure, nodes, 5, false);
    EXPECT_EQ(v.seen, RankSeen::Unknown) << step << ": " << v.why;
    EXPECT_NE(v.why.find("node-1 pid 900 (no rank) may be starting them again"), std::string::npos)
        << v.why;
  }
  // A rank whose step is not known: which steps the ranks run in is not known either.
  auto partly = srun;
  partly[1].processes.front().step = "";
  EXPECT_EQ(rank_exit(partly, nodes, 5, false).seen, RankSeen::Unknown);
  // torchrun's agents run in their workers' step: still unknown.
  auto torchrun = job(8, 4, true, true);
  for (auto& a : torchrun)
    for (auto& p : a.processes) p.step = "0";
  for (int r : {2, 5}) end_rank(torchrun, r);
  EXPECT_EQ(rank_exit(torchrun, nodes_of(torchrun), 5, false).seen, RankSeen::Unknown);
}

// A rank killed by PyTorch's watchdog with core dumps on: its memory, its rank with it, is
// still there while the kernel writes the core, and gdb cannot stop it to look.
TEST(RankExit, ARankDumpingCoreHasEnded) {
  auto srun = job(8, 4, false, true);
  const auto nodes = nodes_of(srun);
  const int pid = own_pid(srun, 5, "SLURM_PROCID");
  for (auto& p : srun[1].processes)
    if (p.pid == pid) p.exiting = "do_coredump";
  for (int named : {5, -1}) {
    auto v = rank_exit(srun, nodes, named, false);
    EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
    EXPECT_EQ(v.why.substr(0, v.why.find(';')),
              "task 5's process is exiting (do_coredump in the kernel, node-2 pid " +
                  std::to_string(pid) + ")")
        << v.why;
  }
  EXPECT_EQ(rank_exit(srun, nodes, 4, false).seen, RankSeen::Running);
}

// srun's --label over one torchrun a node ("1: RuntimeError: ..."): the label names node-2's
// agent, which runs while the worker that printed the line lingers in its exit. The one rank
// ended, exiting, is the line's where it is that agent's own child. On the code before, the
// agent running meant "running".
TEST(RankExit, AWorkerOfTheLabelledTorchrunAgentSeenExitingHasEnded) {
  const auto base = job(8, 4, true, true);
  const auto nodes = nodes_of(base);
  auto with_exiting = [&](std::vector<int> ranks) {
    auto answers = base;
    for (auto& a : answers)
      for (auto& p : a.processes)
        if (p.by == "RANK" && std::find(ranks.begin(), ranks.end(), p.rank) != ranks.end() &&
            p.ppid == a.processes.front().pid)
          p.exiting = "Py_FinalizeEx";
    return answers;
  };
  auto answers = with_exiting({5});
  int agent = answers[1].processes.front().pid, worker = 0;
  for (const auto& p : answers[1].processes)
    if (p.rank == 5 && p.ppid == agent) worker = p.pid;
  auto v = rank_exit(answers, nodes, 1, true);
  EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
  EXPECT_EQ(v.why, "rank 5's process is exiting (Py_FinalizeEx on its main thread, node-2 pid " +
                       std::to_string(worker) + "), a worker of task 1 (node-2 pid " +
                       std::to_string(agent) +
                       "); its program has ended; the other 7 ranks still run (all 2 nodes "
                       "answered)");
  // A worker of the other node's agent: the line's worker runs.
  EXPECT_EQ(rank_exit(with_exiting({2}), nodes, 1, true).seen, RankSeen::Running);
  // Two of its workers exiting: whichever printed the line, their programs have ended (on the
  // code before, the agent running meant "running").
  auto two = with_exiting({4, 5});
  v = rank_exit(two, nodes, 1, true);
  EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
  EXPECT_EQ(v.why.substr(0, v.why.find(" (")), "rank 4's process is exiting");
  EXPECT_NE(v.why.find("; 2 of 8 ranks have ended (2 exiting, 0 gone); the other 6 ranks still "
                       "run (all 2 nodes answered)"),
            std::string::npos)
      << v.why;
  // One exiting and another gone: the agent may be restarting its workers. Its own runs.
  auto one_gone = with_exiting({5});
  end_rank(one_gone, 0);
  EXPECT_EQ(rank_exit(one_gone, nodes, 1, true).seen, RankSeen::Running);
  // A worker's DataLoader worker exiting is not a rank.
  auto loader = base;
  for (auto& p : loader[1].processes)
    if (p.rank == 5 && p.ppid != agent) p.exiting = "exit";
  EXPECT_EQ(rank_exit(loader, nodes, 1, true).seen, RankSeen::Running);
}

// The same from the nodes' printed answers (the fixture, as `stacks --ranks --rank 1 --by-task`
// prints them): the label's task 1 is node-2's agent, its worker rank 3 exiting.
TEST(RankExit, TheTorchrunAgentsFixture) {
  auto answers =
      parse_node_ranks(testing::read_file(testing::fixture("rank-processes/torchrun-agents.txt")));
  ASSERT_EQ(answers.size(), 2u);
  const std::vector<std::string> nodes = {"node-1", "node-2"};
  auto v = rank_exit(answers, nodes, 1, true);
  EXPECT_EQ(v.seen, RankSeen::Ended) << v.why;
  EXPECT_EQ(v.why,
            "rank 3's process is exiting (Py_FinalizeEx on its main thread, node-2 pid 6102), a "
            "worker of task 1 (node-2 pid 6100); its program has ended; the other 3 ranks still "
            "run (all 2 nodes answered)");
  EXPECT_EQ(rank_exit(answers, nodes, 0, true).seen, RankSeen::Running);
  // The line named rank 3 itself, or none: the same rank.
  EXPECT_EQ(rank_exit(answers, nodes, 3, false).seen, RankSeen::Ended);
  EXPECT_EQ(rank_exit(answers, nodes, -1, false).seen, RankSeen::Ended);
  EXPECT_EQ(rank_exit(answers, nodes, 2, false).seen, RankSeen::Running);
}

TEST(RankExit, LessThanWholeEvidenceIsUnknown) {
  auto base = job(8, 4, false, true);
  end_task(base, 5);
  const auto nodes = nodes_of(base);
  auto unknown = [&](std::vector<NodeRanks> a, const std::vector<std::string>& n, int rank,
                     const char* what) {
    auto v = rank_exit(a, n, rank, false);
    EXPECT_EQ(v.seen, RankSeen::Unknown) << what << ": " << v.why;
    EXPECT_FALSE(v.why.empty()) << what;
  };
  // The node it ran on did not answer, or answered in part.
  unknown({base[0]}, nodes, 5, "a node silent");
  auto cut = base;
  cut[1].whole = false;
  unknown(cut, nodes, 5, "an answer cut");
  // A node answered twice, or a node not the task's.
  auto twice = base;
  twice.push_back(base[1]);
  unknown(twice, nodes, 5, "a node twice");
  auto stranger = base;
  stranger.push_back({"node-9", {}, true});
  unknown(stranger, nodes, 5, "a stranger");
  unknown(base, {}, 5, "no node");
  // Another rank gone as well, beside a process that is no rank: a launcher (torchrun's agent)
  // may be starting them again.
  auto two = base;
  end_task(two, 2);
  two[1].processes.push_back({4343, 1, -1, -1, ""});
  unknown(two, nodes, 5, "two ranks gone beside a launcher");
  unknown(two, nodes, -1, "two ranks gone beside a launcher, no rank named");
  // Two processes, neither the other's child, claim one rank (mp.spawn under one srun task).
  auto claimed = base;
  claimed[0].processes.push_back({4242, 1, 1, 8, "SLURM_PROCID"});
  unknown(claimed, nodes, 5, "a rank claimed twice");
  // World sizes that disagree, a rank past the world, a process that names no usable rank.
  auto worlds = base;
  worlds[0].processes[0].world = 16;
  unknown(worlds, nodes, 5, "two world sizes");
  unknown(base, nodes, 8, "past the world");
  auto nameless = base;
  nameless[0].processes[0].rank = -1;
  unknown(nameless, nodes, 5, "a process with no rank");
  // No process names its rank at all (a launcher of its own).
  std::vector<NodeRanks> anonymous = {{"node-1", {{7, 1, -1, -1, ""}}, true}};
  unknown(anonymous, {"node-1"}, 0, "no rank named");
}

// Property: over random jobs, launches and damage, Ended is said only when every node answered
// whole and the rank it names (for no rank, the one it found missing) truly ended, or a node's
// whole answer left that rank's own process out (a listing is trusted: it is /proc's), or the
// rank it names had its own process (not a worker's, not another rank's) seen exiting.
TEST(RankExit, EndedIsSaidOnlyOfARankTrulyGone) {
  std::mt19937 rng(30);
  int ended = 0, unknown = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int per_node = 1 + static_cast<int>(rng() % 8);
    const int world = per_node * (1 + static_cast<int>(rng() % 4));
    const bool torchrun = rng() % 2, workers = rng() % 2;
    const std::string by = torchrun ? "RANK" : "SLURM_PROCID";
    auto answers = job(world, per_node, torchrun, workers);
    const auto nodes = nodes_of(answers);
    std::set<int> gone;
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
      const int r = static_cast<int>(rng() % world);
      torchrun ? end_rank(answers, r) : end_task(answers, r);
      gone.insert(r);
    }
    bool whole = true;
    int left_out = -1;  // a rank whose own process a whole answer left out
    switch (rng() % 6) {
      case 0:  // a node silent
        if (answers.size() > 1)
          answers.erase(answers.begin() + static_cast<long>(rng() % answers.size())), whole = false;
        break;
      case 1:  // a node's answer cut
        answers[rng() % answers.size()].whole = false, whole = false;
        break;
      case 2: {  // a process left out of a whole answer
        auto& a = answers[rng() % answers.size()];
        if (a.processes.empty()) break;
        const auto at = a.processes.begin() + static_cast<long>(rng() % a.processes.size());
        const bool own =
            at->by == by &&
            std::none_of(a.processes.begin(), a.processes.end(), [&](const RankProcess& p) {
              return p.pid == at->ppid && p.rank == at->rank && p.by == by;
            });
        if (own) left_out = at->rank;
        a.processes.erase(at);
        break;
      }
      default:
        break;
    }
    // Some processes seen exiting, none to three: a rank's own, a worker, an agent (each
    // counts for its own rank alone).
    std::set<int> exiting;
    for (int k = rng() % 3 == 0 ? 1 + static_cast<int>(rng() % 3) : 0; k > 0; --k) {
      auto& a = answers[rng() % answers.size()];
      if (!a.processes.empty()) {
        auto& p = a.processes[rng() % a.processes.size()];
        p.exiting = "Py_FinalizeEx";
        const bool own =
            p.by == by &&
            std::none_of(a.processes.begin(), a.processes.end(), [&](const RankProcess& q) {
              return q.pid == p.ppid && q.rank == p.rank && q.by == by;
            });
        if (own) exiting.insert(p.rank);
      }
    }
    const int rank = static_cast<int>(rng() % (world + 1)) - 1;
    auto v = rank_exit(answers, nodes, rank, false);
    if (v.seen == RankSeen::Unknown) ++unknown;
    if (v.seen != RankSeen::Ended) continue;
    ++ended;
    EXPECT_TRUE(whole) << v.why;
    int said = rank;
    if (said < 0) said = std::stoi(v.why.substr(v.why.find(' ') + 1));
    EXPECT_TRUE(gone.count(said) || said == left_out || exiting.count(said)) << v.why;
  }
  EXPECT_GT(ended, 100);
  EXPECT_GT(unknown, 100);
}

}  // namespace
}  // namespace llmwatch
