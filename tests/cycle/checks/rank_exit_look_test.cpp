// #30: the look for the rank that printed a fatal line a rank may go on from, through whole
// cycles against a FakeSlurm: asked 4 s after the line, and again at 8 s where the rank still
// ran, with `srun --overlap ... llmwatch stacks --job 7 --ranks --rank 4`; a rank seen gone ends
// the run's wait as srun's "task N: Exited" would, a rank still running changes nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "ending_run.h"
#include "probes/rank_processes.h"
#include "store_reading.h"
#include "util/strings.h"

namespace llmwatch::testing {
namespace {

// What the three nodes of task 7 answer: ranks 0..5, two a node, without `gone`, and with
// `exiting`'s process seen exiting.
std::string ranks_answer(int gone, int exiting = -1) {
  std::string out;
  for (int node = 0; node < 3; ++node) {
    NodeRanks n{"node-" + std::to_string(node + 1), {}, true};
    for (int r = 2 * node; r < 2 * node + 2; ++r)
      if (r != gone)
        n.processes.push_back({100 + r, 99, r, 6, "RANK", r == exiting ? "Py_FinalizeEx" : ""});
    out += format_node_ranks(n);
  }
  return out;
}

// One stack block, as `llmwatch stacks` prints it: a rank waiting in the collective, or one in
// its interpreter's exit (its `_shutdown`).
std::string stack_block(int node, int rank, bool exiting) {
  return "=== llmwatch-stack node=node-" + std::to_string(node) +
         " pid=" + std::to_string(100 + rank) +
         " comm=python3 ===\nTraceback (most recent call first):\n" +
         (exiting ? "  File \"/usr/lib/python3.11/threading.py\", line 1583, in _shutdown\n"
                  : "  File \"/w/train.py\", line 14, in wait_in_allreduce\n");
}

// What the three nodes answer to `--ranks --with-stacks` through srun --label: each node's
// ranks block and then its ranks' stacks, its lines labelled with its task and interleaved with
// the other nodes' (node-1's stacks come in between node-2's lines).
std::string labelled_answer_with_stacks(int exiting) {
  std::vector<std::string> lines[3];
  for (int node = 0; node < 3; ++node) {
    NodeRanks n{"node-" + std::to_string(node + 1), {}, true};
    std::string stacks;
    for (int r = 2 * node; r < 2 * node + 2; ++r) {
      n.processes.push_back({100 + r, 99, r, 6, "RANK", r == exiting ? "Py_FinalizeEx" : ""});
      stacks += stack_block(node + 1, r, r == exiting);
    }
    for (const auto& line : split(format_node_ranks(n) + stacks, '\n'))
      if (!line.empty()) lines[node].push_back(std::to_string(node) + ": " + line);
  }
  std::string out;
  for (std::size_t i = 0; i < 16; ++i)
    for (int node : {1, 0, 2})
      if (i < lines[node].size()) out += lines[node][i] + "\n";
  return out;
}

// The same stacks as the hang's dump prints them (srun's label left off: read as they are).
std::string dump_of_every_rank(int exiting) {
  std::string out;
  for (int r = 0; r < 6; ++r) out += stack_block(r / 2 + 1, r, r == exiting);
  return out;
}

bool asks_ranks(const std::vector<std::string>& step) {
  return std::find(step.begin(), step.end(), "--ranks") != step.end();
}

// Task 7 steps every 10 s for 50 s, then rank 4 prints a DistBackendError (a line a trainer
// may catch), read 5 s after the last step; the nodes answer `answer` when asked.
struct RaisedNcclError {
  EndingRun run;
  // `prefix`: who the lines say printed them ("": a log without rank prefixes).
  explicit RaisedNcclError(const std::string& answer, const std::string& dump = "",
                           const std::string& prefix = "[rank4]: ") {
    run.steps_every_10s();
    write_file(run.log,
               prefix + "Traceback (most recent call last):\n" + prefix +
                   "torch.distributed.DistBackendError: NCCL error in: "
                   "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network "
                   "error\n",
               true);
    run.slurm.step_outputs = {answer, dump};
    run.cycle(run.now + 55);
  }
  // The srun steps that asked which ranks run.
  int looks() {
    int n = 0;
    for (const auto& step : run.slurm.steps) n += asks_ranks(step);
    return n;
  }
  std::string look_step() {
    std::string out;
    for (const auto& step : run.slurm.steps)
      if (asks_ranks(step))
        for (const auto& a : step) out += a + " ";
    return out;
  }
};

TEST(RankExitLook, ARankSeenGoneEndsTheWaitEightSecondsAfterItsLine) {
  // The hang's first dump finds a rank waiting in a Python frame: kept, a second one due.
  RaisedNcclError e(ranks_answer(4),
                    "=== llmwatch-stack node=node-1 pid=100 comm=python3 ===\n"
                    "Traceback (most recent call first):\n"
                    "  File \"/w/train.py\", line 14, in wait_in_allreduce\n");
  EXPECT_EQ(e.looks(), 0) << "not before its 4 s";
  auto r = e.run.cycle(e.run.now + 64);
  ASSERT_EQ(e.looks(), 1) << event_lines(*e.run.store);
  EXPECT_NE(e.look_step().find("--jobid=7 --overlap --nodes=3 --ntasks=3 --ntasks-per-node=1 "
                               "--kill-on-bad-exit=0 --quiet "),
            std::string::npos)
      << e.look_step();
  // The rank its line named is asked about by name (RANK: its "[rank4]:" prefix).
  EXPECT_NE(e.look_step().find(" stacks --job 7 --ranks --rank 4 "), std::string::npos)
      << e.look_step();
  EXPECT_EQ(e.look_step().find("--by-task"), std::string::npos) << e.look_step();
  const Finding* hung = e.run.finding(r, "hung");
  ASSERT_TRUE(hung) << event_lines(*e.run.store);
  EXPECT_NE(hung->summary.find("whose rank's process has since ended"), std::string::npos)
      << hung->summary;
  EXPECT_NE(event_lines(*e.run.store)
                .find("ended: rank 4's process has ended; the other 5 ranks still run (all 3 "
                      "nodes answered)"),
            std::string::npos)
      << event_lines(*e.run.store);
  // The dump's confirmation gap is the one this cycle's look made, 4 s, not the two intervals'
  // 10 s the store held until the record phase (its message said 10 s, then waited 4 s).
  std::string dump;
  for (const auto& a : e.run.store->recent_actions(20))
    if (a.kind == "dump") dump = a.detail;
  EXPECT_NE(dump.find("first dump kept"), std::string::npos) << dump;
  EXPECT_NE(dump.find("a second one 4s later"), std::string::npos) << dump;
  EXPECT_TRUE(e.run.slurm.cancelled.empty()) << "nothing cancelled before the second dump";
  // Once a crash: not asked again.
  e.run.cycle(e.run.now + 70);
  EXPECT_EQ(e.looks(), 1);
}

// Rank 4's process is there, but exiting (its program ended; it lingers in its exit): its
// line is one no rank goes on from all the same. On the code before, only a process gone was.
TEST(RankExitLook, ARankLingeringInItsExitEndsTheWaitAsOneGone) {
  RaisedNcclError e(ranks_answer(-1, 4));
  auto r = e.run.cycle(e.run.now + 64);
  ASSERT_EQ(e.looks(), 1);
  EXPECT_TRUE(e.run.store->progress("tr").crash_sticky);
  const Finding* hung = e.run.finding(r, "hung");
  ASSERT_TRUE(hung) << event_lines(*e.run.store);
  EXPECT_NE(hung->summary.find("whose rank's process has since ended or is exiting"),
            std::string::npos)
      << hung->summary;
  EXPECT_NE(event_lines(*e.run.store)
                .find("ended: rank 4's process is exiting (Py_FinalizeEx on its main thread, "
                      "node-3 pid 104); its program has ended"),
            std::string::npos)
      << event_lines(*e.run.store);
}

// The same lines with no rank prefix (the most common log): every rank's process is looked into
// (`--every-rank`), and rank 4's, exiting, is the one ended. On the code before, the look asked
// about no process's exit and said "running: every one of the 6 ranks' processes runs".
TEST(RankExitLook, ALineNamingNoRankEndsTheWaitWhereOneRankIsExiting) {
  RaisedNcclError e(ranks_answer(-1, 4), "", "");
  auto r = e.run.cycle(e.run.now + 64);
  ASSERT_EQ(e.looks(), 1);
  EXPECT_NE(e.look_step().find(" stacks --job 7 --ranks --every-rank "), std::string::npos)
      << e.look_step();
  EXPECT_EQ(e.look_step().find("--rank "), std::string::npos) << e.look_step();
  EXPECT_TRUE(e.run.store->progress("tr").crash_sticky);
  EXPECT_TRUE(e.run.finding(r, "hung")) << event_lines(*e.run.store);
  EXPECT_NE(event_lines(*e.run.store)
                .find("ended: rank 4's process is exiting (Py_FinalizeEx on its main thread, "
                      "node-3 pid 104); its program has ended; the other 5 ranks still run (all "
                      "3 nodes answered)"),
            std::string::npos)
      << event_lines(*e.run.store);
}

// Still there 4 s after its line (a teardown of some seconds): asked again 8 s after it, gone
// then, and the hang is found on that cycle. Before, the one look came at 8 s.
TEST(RankExitLook, ARankStillThereAtTheFirstLookIsAskedAgainAtEightSeconds) {
  RaisedNcclError e(ranks_answer(-1));
  e.run.slurm.step_outputs = {ranks_answer(-1), ranks_answer(4)};
  e.run.cycle(e.run.now + 60);  // 5 s after the line
  ASSERT_EQ(e.looks(), 1);
  EXPECT_FALSE(e.run.store->progress("tr").crash_sticky);
  e.run.cycle(e.run.now + 62);  // the second is due at 8 s, not before
  EXPECT_EQ(e.looks(), 1);
  auto r = e.run.cycle(e.run.now + 64);
  ASSERT_EQ(e.looks(), 2) << event_lines(*e.run.store);
  EXPECT_TRUE(e.run.store->progress("tr").crash_sticky);
  EXPECT_TRUE(e.run.finding(r, "hung")) << event_lines(*e.run.store);
  e.run.cycle(e.run.now + 70);
  EXPECT_EQ(e.looks(), 2) << "no third";
}

// The look takes each rank's stack with the backtrace it reads for the exit; where it finds the
// rank ended, those stacks are the hang's first dump. The hang, found 8 s after the line, is
// then dumped once more and cancelled in that cycle, no gap later. On the code before, the
// look's answer held no stacks the daemon kept: the dump at 8 s was the first, and nothing was
// cancelled before the second, a confirmation gap later (12 s).
TEST(RankExitLook, AnEndedRanksLookIsTheHangsFirstDump) {
  RaisedNcclError e(ranks_answer(-1), "", "");
  e.run.slurm.step_outputs = {labelled_answer_with_stacks(4), dump_of_every_rank(4)};
  e.run.cycle(e.run.now + 59);  // the look, 4 s after the line
  ASSERT_EQ(e.looks(), 1) << event_lines(*e.run.store);
  EXPECT_NE(e.look_step().find(" --quiet --label "), std::string::npos) << e.look_step();
  EXPECT_NE(e.look_step().find(" --every-rank --with-stacks "), std::string::npos) << e.look_step();
  EXPECT_TRUE(e.run.store->progress("tr").crash_sticky) << event_lines(*e.run.store);
  EXPECT_NE(event_lines(*e.run.store)
                .find("the other 5 ranks still run (all 3 nodes answered); its ranks' stacks are "
                      "the hang's first dump (6 processes: 5 in wait_in_allreduce (train.py:14); "
                      "1 in _shutdown (threading.py:1583) [node-3 pid 104])"),
            std::string::npos)
      << event_lines(*e.run.store);
  EXPECT_EQ(e.run.slurm.steps.size(), 1u) << "no dump before the hang";
  auto r = e.run.cycle(e.run.now + 64);  // past 8 s after the line: hung
  ASSERT_TRUE(e.run.finding(r, "hung")) << event_lines(*e.run.store);
  std::string dump;
  for (const auto& a : e.run.store->recent_actions(20))
    if (a.kind == "dump") dump = a.detail;
  EXPECT_EQ(dump.find("first dump kept"), std::string::npos) << dump;
  EXPECT_NE(dump.find("1 in _shutdown (threading.py:1583) [node-3 pid 104]"), std::string::npos)
      << dump;
  EXPECT_EQ(e.run.slurm.cancelled.size(), 1u)
      << "the hang confirmed by the look's stacks and the dump's: " << event_lines(*e.run.store);
}

// The look's stacks taken while a peer still computed its step (rank 0 in its training loop, not
// yet in the collective): the dump once the hang is found sees it moved. That is no sign of life
// (the stacks were taken before the hang began): this dump is the first and a second one a gap
// later confirms, as before the look took any. In the first version it was a near miss, and the
// run waited its full allowance (crash line -> RUNNING 59 s in bench/crash_latency.py, from 15 s).
TEST(RankExitLook, StacksThatMovedSinceTheLookAreNoNearMiss) {
  RaisedNcclError e(ranks_answer(-1), "", "");
  std::string look = labelled_answer_with_stacks(4);
  const std::string waiting = "in wait_in_allreduce\n";
  look.replace(look.find(waiting), waiting.size(), "in <module>\n");
  e.run.slurm.step_outputs = {look, dump_of_every_rank(4), dump_of_every_rank(4)};
  e.run.cycle(e.run.now + 60);
  // Hung (13 s allowed from the last step at +50), the dump waiting for the look's gap.
  ASSERT_TRUE(e.run.finding(e.run.cycle(e.run.now + 63.5), "hung")) << event_lines(*e.run.store);
  EXPECT_NE(event_lines(*e.run.store).find("dump waiting: confirming the hang"), std::string::npos)
      << event_lines(*e.run.store);
  EXPECT_TRUE(e.run.slurm.cancelled.empty());
  e.run.cycle(e.run.now + 64.5);
  std::string dump;
  for (const auto& a : e.run.store->recent_actions(20))
    if (a.kind == "dump") dump = a.detail;
  EXPECT_NE(dump.find("this dump is the first, kept"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("near miss"), std::string::npos) << dump;
  EXPECT_TRUE(e.run.slurm.cancelled.empty());
  // And in the events, though the dump waited before: the dump taken since is told (on the
  // code before, only the actions table said it, the wait having been told once).
  EXPECT_NE(event_lines(*e.run.store).find("dump waiting: the stacks moved since the look"),
            std::string::npos)
      << event_lines(*e.run.store);
  e.run.cycle(e.run.now + 69);  // the gap after it: confirmed
  EXPECT_EQ(e.run.slurm.cancelled.size(), 1u) << event_lines(*e.run.store);
}

// A rank still running at the look: its stacks are not kept (the run may step on, and its hang,
// if any, comes two intervals later with a dump of its own), and a node's stack lines are never
// read as its ranks (a ranks header inside a stack is a stack's line).
TEST(RankExitLook, ARunningRanksLookKeepsNoDump) {
  RaisedNcclError e(ranks_answer(-1), "", "");
  std::string answer = labelled_answer_with_stacks(-1);
  answer +=
      "2:     === llmwatch-ranks node=node-3 processes=1 ===\n"
      "2: pid=104 ppid=99 rank=4 world=6 by=RANK exiting=Py_FinalizeEx\n";
  e.run.slurm.step_outputs = {answer};
  e.run.cycle(e.run.now + 59);
  ASSERT_EQ(e.looks(), 1);
  EXPECT_FALSE(e.run.store->progress("tr").crash_sticky) << event_lines(*e.run.store);
  EXPECT_NE(event_lines(*e.run.store).find("running: "), std::string::npos)
      << event_lines(*e.run.store);
  EXPECT_EQ(event_lines(*e.run.store).find("first dump"), std::string::npos)
      << event_lines(*e.run.store);
}

TEST(RankExitLook, ARankStillRunningOrNotSeenChangesNothing) {
  for (const std::string& answer :
       {ranks_answer(-1), std::string(""), ranks_answer(4).substr(0, 60), ranks_answer(-1, 3)}) {
    RaisedNcclError e(answer);
    auto r = e.run.cycle(e.run.now + 64);
    EXPECT_EQ(e.looks(), 1) << answer;
    // Two 10 s intervals from the last step (at +50): not hung before +70.
    EXPECT_FALSE(e.run.finding(r, "hung")) << answer << event_lines(*e.run.store);
    EXPECT_TRUE(e.run.slurm.cancelled.empty());
    EXPECT_EQ(e.run.store->progress("tr").crash_sticky, false) << answer;
    e.run.cycle(e.run.now + 66);
    EXPECT_EQ(e.looks(), 1) << "a first look 8 s or more after the line is the last";
  }
}

}  // namespace
}  // namespace llmwatch::testing
