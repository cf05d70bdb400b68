// Which rank each of a job's processes is, as `llmwatch stacks --ranks` prints it on a node
// (#30), and how its output is read back: a node's answer that was cut or garbled is never
// read as "fewer processes".
#include "probes/rank_processes.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace llmwatch {
namespace {

TEST(RankProcesses, TheRankIsRankWhereTheEnvironmentHasItElseSrunsTask) {
  auto torch = process_rank(
      10, 9, {{"RANK", "5"}, {"WORLD_SIZE", "16"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(torch.rank, 5);
  EXPECT_EQ(torch.world, 16);
  EXPECT_EQ(torch.by, "RANK");
  EXPECT_EQ(torch.ppid, 9);
  auto srun = process_rank(11, 1, {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}});
  EXPECT_EQ(srun.rank, 3);
  EXPECT_EQ(srun.world, 4);
  EXPECT_EQ(srun.by, "SLURM_PROCID");
  auto none = process_rank(12, 1, {{"PATH", "/usr/bin"}});
  EXPECT_EQ(none.rank, -1);
  EXPECT_EQ(none.by, "");
  // Named, but not as a number: no rank (never a guess), still said by what named it.
  for (const char* bad : {"x", "-1", "5 ", "", "99999999999"}) {
    auto p = process_rank(13, 1, {{"RANK", bad}, {"WORLD_SIZE", "8"}});
    EXPECT_EQ(p.rank, -1) << bad;
    EXPECT_EQ(p.by, "RANK") << bad;
  }
}

TEST(RankProcesses, ThisProcessIsReadFromProc) {
  EXPECT_EQ(parent_of(::getpid()), ::getppid());
  EXPECT_FALSE(process_environment(::getpid()).empty());
  EXPECT_TRUE(process_environment(-1).empty());
  EXPECT_EQ(parent_of(-1), 0);
}

TEST(RankProcesses, WhatANodePrintsIsReadBackWhole) {
  NodeRanks a{"node-1", {{101, 100, 0, 2, "SLURM_PROCID"}, {102, 101, -1, -1, ""}}, true};
  NodeRanks b{"node-2", {}, true};
  auto back =
      parse_node_ranks("srun: some chatter\n" + format_node_ranks(b) + format_node_ranks(a));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].node, "node-2");
  EXPECT_TRUE(back[0].whole);
  EXPECT_TRUE(back[0].processes.empty());
  EXPECT_EQ(back[1].node, "node-1");
  EXPECT_TRUE(back[1].whole);
  ASSERT_EQ(back[1].processes.size(), 2u);
  EXPECT_EQ(back[1].processes[0].pid, 101);
  EXPECT_EQ(back[1].processes[0].ppid, 100);
  EXPECT_EQ(back[1].processes[0].rank, 0);
  EXPECT_EQ(back[1].processes[0].world, 2);
  EXPECT_EQ(back[1].processes[0].by, "SLURM_PROCID");
  EXPECT_EQ(back[1].processes[1].rank, -1);
  EXPECT_EQ(back[1].processes[1].by, "");
}

TEST(RankProcesses, AnAnswerCutOrGarbledIsNotWhole) {
  NodeRanks a{"node-1", {{101, 1, 0, 2, "RANK"}, {102, 1, 1, 2, "RANK"}}, true};
  const std::string full = format_node_ranks(a);
  // Cut after its first process (a step killed at its timeout): the header counted two.
  auto cut = parse_node_ranks(full.substr(0, full.find("pid=102")));
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_FALSE(cut[0].whole);
  // A line cut in the middle, a field that is not a number, an unknown source, a field missing.
  for (const std::string& bad : {std::string("pid=102 ppid=1 rank=1 wor"),
                                 std::string("pid=102 ppid=1 rank=x world=2 by=RANK"),
                                 std::string("pid=102 ppid=1 rank=1 world=2 by=HOSTNAME"),
                                 std::string("pid=102 rank=1 world=2 by=RANK"),
                                 std::string("pid=0 ppid=1 rank=1 world=2 by=RANK")}) {
    std::string text = full.substr(0, full.find("pid=102")) + bad + "\n";
    auto got = parse_node_ranks(text);
    ASSERT_EQ(got.size(), 1u) << bad;
    EXPECT_FALSE(got[0].whole) << bad;
  }
  // Another line inside a block: that block is not read as whole.
  auto chatter = parse_node_ranks(full + "srun: some chatter\n");
  ASSERT_EQ(chatter.size(), 1u);
  EXPECT_FALSE(chatter[0].whole);
  // A header that is not ours whole: its block is nobody's, and its lines are not node-1's.
  auto odd = parse_node_ranks(
      "=== llmwatch-ranks node=bad name processes=1 ===\n"
      "pid=5 ppid=1 rank=0 world=1 by=RANK\n");
  EXPECT_TRUE(odd.empty());
}

// One node's answer read back: whole, and the only block.
NodeRanks read_whole(const std::string& text) {
  auto back = parse_node_ranks(text);
  EXPECT_EQ(back.size(), 1u) << text;
  EXPECT_TRUE(!back.empty() && back[0].whole) << text;
  return back.empty() ? NodeRanks{} : back[0];
}

// Whether a process line that ends with `tail` after its five fields makes its answer not whole.
bool a_line_ending_so_is_bad(const std::string& tail) {
  auto got = parse_node_ranks(
      "=== llmwatch-ranks node=node-2 processes=1 ===\n"
      "pid=201 ppid=1 rank=1 world=2 by=SLURM_PROCID " +
      tail + "\n");
  return got.size() == 1 && !got[0].whole;
}

// The rank asked about, where its process was seen exiting, says so, and is read back;
// a frame that is not a name is a garbled line.
TEST(RankProcesses, AnExitingRankIsSaidAndReadBack) {
  NodeRanks a{"node-2",
              {{201, 1, 1, 2, "SLURM_PROCID", "Py_FinalizeEx"}, {202, 201, 1, 2, "SLURM_PROCID"}},
              true};
  const std::string text = format_node_ranks(a);
  EXPECT_NE(text.find("pid=201 ppid=1 rank=1 world=2 by=SLURM_PROCID exiting=Py_FinalizeEx\n"),
            std::string::npos)
      << text;
  const auto back = read_whole(text);
  ASSERT_EQ(back.processes.size(), 2u);
  EXPECT_EQ(back.processes[0].exiting, "Py_FinalizeEx");
  EXPECT_EQ(back.processes[1].exiting, "");
  for (const char* bad :
       {"exiting=", "exiting=Py Final", "exiting=$(rm -rf /)", "finalizing=Py_FinalizeEx",
        "exiting=Py_FinalizeEx exiting=Py_FinalizeEx"})
    EXPECT_TRUE(a_line_ending_so_is_bad(bad)) << bad;
}

// Each process's step, as slurmd listed it, goes with it: a launcher in the batch step is told
// apart from an agent in the ranks' own step. A line of an answer printed before stop 83 (no
// step) reads as before; a step that is not one of slurmd's names is not printed, and a line
// that says one anyway is bad.
TEST(RankProcesses, EachProcessesStepIsSaidAndReadBack) {
  RankProcess launcher{100, 1, -1, -1, ""};
  launcher.step = "batch";
  RankProcess rank{201, 1, 0, 2, "SLURM_PROCID", "do_coredump"};
  rank.step = "12+1";
  RankProcess odd{202, 1, 1, 2, "SLURM_PROCID"};
  odd.step = "0 exiting=x";
  const std::string text = format_node_ranks({"node-1", {launcher, rank, odd}, true});
  EXPECT_NE(text.find("pid=100 ppid=1 rank=-1 world=-1 by=- step=batch\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("pid=201 ppid=1 rank=0 world=2 by=SLURM_PROCID step=12+1 "
                      "exiting=do_coredump\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pid=202 ppid=1 rank=1 world=2 by=SLURM_PROCID\n"), std::string::npos)
      << text;
  const auto back = read_whole(text);
  ASSERT_EQ(back.processes.size(), 3u);
  EXPECT_EQ(back.processes[0].step, "batch");
  EXPECT_EQ(back.processes[1].step, "12+1");
  EXPECT_EQ(back.processes[1].exiting, "do_coredump");
  EXPECT_EQ(back.processes[2].step, "");
  for (const char* bad :
       {"step=", "step=Batch", "step=$(id)", "exiting=do_exit step=0", "step=0 step=1"})
    EXPECT_TRUE(a_line_ending_so_is_bad(bad)) << bad;
}

// Which process of a node is the rank asked about: the one its launcher named so, not its
// DataLoader workers; none where two claim it, or where none does.
TEST(RankProcesses, TheRankAskedAboutIsOneProcessOrNone) {
  // srun, a task a rank, rank 1 with a worker.
  std::vector<RankProcess> srun = {{101, 1, 0, 2, "SLURM_PROCID"},
                                   {102, 1, 1, 2, "SLURM_PROCID"},
                                   {103, 102, 1, 2, "SLURM_PROCID"}};
  EXPECT_EQ(rank_process_pid(srun, 1, false), 102);
  EXPECT_EQ(rank_process_pid(srun, 1, true), 102);
  EXPECT_EQ(rank_process_pid(srun, 0, false), 101);
  EXPECT_EQ(rank_process_pid(srun, 5, false), 0);
  // torchrun: the agent has only SLURM_PROCID (the node's), the workers RANK.
  std::vector<RankProcess> torch = {{200, 1, 1, 2, "SLURM_PROCID"},
                                    {201, 200, 4, 8, "RANK"},
                                    {202, 200, 5, 8, "RANK"},
                                    {203, 202, 5, 8, "RANK"}};
  EXPECT_EQ(rank_process_pid(torch, 5, false), 202);
  EXPECT_EQ(rank_process_pid(torch, 1, false), 0);   // RANK 1 is not on this node
  EXPECT_EQ(rank_process_pid(torch, 1, true), 200);  // srun's label: the agent
  // Two processes, neither the other's child, claim the rank: neither is looked into.
  srun.push_back({104, 1, 1, 2, "SLURM_PROCID"});
  EXPECT_EQ(rank_process_pid(srun, 1, false), 0);
  EXPECT_EQ(rank_process_pid({}, 0, false), 0);
}

// What a node attaches to for a line's rank: its own process; for srun's task that is a torchrun
// agent, the workers it launched too (not their DataLoader workers).
TEST(RankProcesses, ATaskThatIsTorchrunsAgentIsLookedIntoWithItsWorkers) {
  std::vector<RankProcess> srun = {{101, 1, 0, 2, "SLURM_PROCID"},
                                   {102, 1, 1, 2, "SLURM_PROCID"},
                                   {103, 102, 1, 2, "SLURM_PROCID"}};
  EXPECT_EQ(rank_look_pids(srun, 1, true), (std::vector<int>{102}));
  EXPECT_EQ(rank_look_pids(srun, 1, false), (std::vector<int>{102}));
  std::vector<RankProcess> torch = {{200, 1, 1, 2, "SLURM_PROCID"},
                                    {201, 200, 4, 8, "RANK"},
                                    {202, 200, 5, 8, "RANK"},
                                    {203, 202, 5, 8, "RANK"}};
  EXPECT_EQ(rank_look_pids(torch, 1, true), (std::vector<int>{200, 201, 202}));
  EXPECT_EQ(rank_look_pids(torch, 5, false), (std::vector<int>{202}));
  EXPECT_TRUE(rank_look_pids(torch, 0, true).empty());  // task 0 is another node's
}

// A line that names no rank (#30): every rank's own process on the node is looked into, none
// of their DataLoader workers, nor torchrun's agent where the workers name their RANK.
TEST(RankProcesses, EveryRanksOwnProcessIsTheRanksNotTheirWorkers) {
  std::vector<RankProcess> srun = {{101, 1, 0, 2, "SLURM_PROCID"},
                                   {102, 1, 1, 2, "SLURM_PROCID"},
                                   {103, 102, 1, 2, "SLURM_PROCID"},
                                   {104, 1, -1, -1, ""}};
  EXPECT_EQ(own_rank_pids(srun), (std::vector<int>{101, 102}));
  std::vector<RankProcess> torch = {{200, 1, 1, 2, "SLURM_PROCID"},
                                    {201, 200, 4, 8, "RANK"},
                                    {202, 200, 5, 8, "RANK"},
                                    {203, 202, 5, 8, "RANK"}};
  EXPECT_EQ(own_rank_pids(torch), (std::vector<int>{201, 202}));
  // Two processes claiming one rank are both its own: the rule (rules/rank_exit.h) says unknown.
  srun.push_back({105, 1, 1, 2, "SLURM_PROCID"});
  EXPECT_EQ(own_rank_pids(srun), (std::vector<int>{101, 102, 105}));
  EXPECT_TRUE(own_rank_pids({}).empty());
  EXPECT_EQ(every_rank_look_pids(torch), (std::vector<int>{201, 202}));
}

// What each process is to its node's ranks, as a dump marks it: torchrun's agent names no RANK
// (other), its workers are the ranks, their DataLoader workers workers; under srun the tasks
// are the ranks, a child carrying its task's name (a DataLoader worker, mp.spawn's child) a
// worker, a process with no Slurm name other.
TEST(RankProcesses, EachProcessIsARankItsWorkerOrOther) {
  std::vector<RankProcess> torch = {
      {200, 1, 1, 2, "SLURM_PROCID"}, {201, 200, 4, 8, "RANK"}, {203, 201, 4, 8, "RANK"}};
  std::vector<std::string> roles;
  for (const auto& p : torch) roles.push_back(process_role(torch, p));
  EXPECT_EQ(roles, (std::vector<std::string>{"other", "rank", "worker"}));
  std::vector<RankProcess> srun = {
      {101, 1, 0, 2, "SLURM_PROCID"}, {103, 101, 0, 2, "SLURM_PROCID"}, {104, 1, -1, -1, ""}};
  roles.clear();
  for (const auto& p : srun) roles.push_back(process_role(srun, p));
  EXPECT_EQ(roles, (std::vector<std::string>{"rank", "worker", "other"}));
}

// The batch step's environment names task 0 as the srun step's task 0 does: a Python launcher
// there beside the step's ranks is none of them, nor is torchrun's agent run by the batch
// script, but its workers' RANK still names them beside a helper's srun step. Alone on its node
// (`python train.py` run by the batch script), or with no step known, nothing changes.
TEST(RankProcesses, TheBatchStepsTaskIsNoneBesideAnSrunStep) {
  auto with_steps = [](std::vector<RankProcess> processes, std::vector<std::string> steps) {
    for (std::size_t i = 0; i < processes.size(); ++i) processes[i].step = steps[i];
    unname_tasks_beside_srun(processes);
    std::vector<std::string> out;
    for (const auto& p : processes)
      out.push_back(p.by + " " + std::to_string(p.rank) + " " + std::to_string(p.world) + " " +
                    process_role(processes, p));
    return out;
  };
  const std::vector<RankProcess> launcher_and_ranks = {{100, 1, 0, 2, "SLURM_PROCID"},
                                                       {101, 1, 0, 2, "SLURM_PROCID"},
                                                       {102, 101, 0, 2, "SLURM_PROCID"}};
  EXPECT_EQ(with_steps(launcher_and_ranks, {"batch", "0", "0"}),
            (std::vector<std::string>{" -1 -1 other", "SLURM_PROCID 0 2 rank",
                                      "SLURM_PROCID 0 2 worker"}));
  for (const char* own : {"extern", "interactive"})
    EXPECT_EQ(with_steps(launcher_and_ranks, {own, "3", "3"})[0], " -1 -1 other") << own;
  // The job's own steps alone: as before (here two claim task 0, which the rule calls unknown).
  EXPECT_EQ(with_steps(launcher_and_ranks, {"batch", "batch", "extern"}),
            (std::vector<std::string>{"SLURM_PROCID 0 2 rank", "SLURM_PROCID 0 2 rank",
                                      "SLURM_PROCID 0 2 worker"}));
  EXPECT_EQ(with_steps(launcher_and_ranks, {"", "", ""})[0], "SLURM_PROCID 0 2 rank");
  // torchrun run by the batch script, a helper's srun step beside it.
  const std::vector<RankProcess> torchrun_and_helper = {{200, 1, 0, 1, "SLURM_PROCID"},
                                                        {201, 200, 0, 8, "RANK"},
                                                        {202, 200, 1, 8, "RANK"},
                                                        {300, 1, 0, 1, "SLURM_PROCID"}};
  EXPECT_EQ(with_steps(torchrun_and_helper, {"batch", "batch", "batch", "0"}),
            (std::vector<std::string>{" -1 -1 other", "RANK 0 8 rank", "RANK 1 8 rank",
                                      "SLURM_PROCID 0 1 other"}));
}

TEST(RankProcesses, ANodeOfManyRanksIsNotLookedIntoForExits) {
  std::vector<RankProcess> many;
  for (int r = 0; r < static_cast<int>(kMaxExitLooks); ++r)
    many.push_back({1000 + r, 1, r, 128, "SLURM_PROCID"});
  EXPECT_EQ(every_rank_look_pids(many).size(), kMaxExitLooks);
  many.push_back({2000, 1, 100, 128, "SLURM_PROCID"});
  EXPECT_EQ(own_rank_pids(many).size(), kMaxExitLooks + 1);
  EXPECT_TRUE(every_rank_look_pids(many).empty());
  // Under srun's label, an agent with that many workers: the agent alone.
  std::vector<RankProcess> agent = {{500, 1, 0, 1, "SLURM_PROCID"}};
  for (int r = 0; r <= static_cast<int>(kMaxExitLooks); ++r)
    agent.push_back({600 + r, 500, r, 128, "RANK"});
  EXPECT_EQ(rank_look_pids(agent, 0, true), (std::vector<int>{500}));
}

}  // namespace
}  // namespace llmwatch
