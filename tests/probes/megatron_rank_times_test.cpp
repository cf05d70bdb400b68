// Megatron-LM's per-rank timers in its own log (#28): each rank's forward + backward compute,
// placed on its node by block layout, judged as the helper's timing is.
#include "probes/megatron_rank_times.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "rules/straggler.h"

namespace llmwatch {
namespace {

std::vector<std::string> fixture_lines() {
  std::ifstream in(std::string(LLMWATCH_TEST_FIXTURES) + "/megatron/timers-all-ranks.log");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MegatronRankTimes, EachBlockIsEveryRanksForwardPlusBackwardCompute) {
  MegatronRankTimes m;
  for (const auto& line : fixture_lines()) m.feed(line);
  // The last block has no line after it yet: it ends with the next iteration's line.
  auto blocks = m.take();
  ASSERT_EQ(blocks.size(), 2u);
  m.feed(" [2026-11-25 10:00:40] iteration       40/  500000 | consumed samples: 20480 |");
  auto last = m.take();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(blocks[0].seq, 1);
  EXPECT_EQ(last[0].seq, 3);
  ASSERT_EQ(blocks[0].compute_s.size(), 8u);
  // Rank 0: forward-compute 597.40 + backward-compute (read from the fixture) ms, in seconds;
  // forward-backward (which holds the wait in the collective) is not counted.
  EXPECT_GT(blocks[0].compute_s.at(0), 1.7);
  EXPECT_LT(blocks[0].compute_s.at(0), 1.9);
  EXPECT_GT(blocks[0].compute_s.at(7) / blocks[0].compute_s.at(0), 1.35);
  EXPECT_EQ(m.blocks_without_compute(), 0);
}

TEST(MegatronRankTimes, ALaunchersPrefixAndABlockCutBetweenTwoReadsAreRead) {
  MegatronRankTimes m;
  auto lines = fixture_lines();
  // The first read ends mid-block, the second holds the rest: one block, every rank in it.
  for (std::size_t i = 0; i < 10; ++i) m.feed("[default0]:" + lines[i]);
  EXPECT_TRUE(m.take().empty());
  for (std::size_t i = 10; i < 57; ++i) m.feed("[default0]:" + lines[i]);
  auto blocks = m.take();
  ASSERT_EQ(blocks.size(), 1u) << lines[56];
  EXPECT_EQ(blocks[0].compute_s.size(), 8u);
}

// torchrun --tee: every rank's output in one file, each line prefixed. Another rank's lines
// between the block's are skipped; the block still holds every rank and ends at its own
// process's next line.
TEST(MegatronRankTimes, AnotherRanksLinesInsideTheBlockAreSkipped) {
  MegatronRankTimes m;
  auto lines = fixture_lines();
  for (std::size_t i = 0; i < 57; ++i) {
    m.feed("[default7]:" + lines[i]);
    if (i % 5 == 2) m.feed("[default3]:W1125 10:00:11 warnings.warn(some library warning)");
  }
  auto blocks = m.take();
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].compute_s.size(), 8u);
  EXPECT_GT(blocks[0].compute_s.at(7) / blocks[0].compute_s.at(0), 1.35);
}

TEST(MegatronRankTimes, WithoutComputeTimersNothingIsJudgedAndTheReasonIsSaid) {
  LogRankTimes state;
  for (const char* line : {"times across ranks (ms):", "  forward-backward:",
                           "     rank  0: 1821.36", "     rank  1: 1822.68", "iteration 20"})
    state.parser.feed(line);
  state.keep(state.parser.take(), 100, 20);
  EXPECT_EQ(state.parser.blocks_without_compute(), 1);
  auto read = rank_timing_from_blocks(state, {"node-1", "node-2"});
  EXPECT_TRUE(read.ranks.empty());
  EXPECT_NE(read.error.find("--timing-log-level 2"), std::string::npos) << read.error;
}

TEST(MegatronRankTimes, MalformedRankLinesAreNeverTaken) {
  MegatronRankTimes m;
  for (const char* line :
       {"times across ranks (ms):", "  forward-compute:", "     rank  0: 600.5",
        "     rank  1: nan", "     rank  2: 600.1",
        "times across ranks (ms):", "  backward-compute:", "     rank -3: 5", "     rank  3: -1",
        "     rank  4: 1e400", "     rank 99999999999: 5", "     rank  5: 601.0 ms", "done"})
    m.feed(line);
  auto blocks = m.take();
  ASSERT_EQ(blocks.size(), 1u);               // the second held no valid rank line
  EXPECT_EQ(blocks[0].compute_s.size(), 1u);  // rank 0; "rank 1: nan" ended the block
  EXPECT_DOUBLE_EQ(blocks[0].compute_s.at(0), 0.6005);
}

// Ranks are placed in blocks over the task's nodes, in Slurm's order; a world that does not
// divide over them is an error, never a guess.
TEST(MegatronRankTimes, RanksArePlacedInBlocksOverTheNodesOrNotAtAll) {
  LogRankTimes state;
  for (int b = 0; b < 6; ++b) {
    RankTimesBlock block{b + 1, {}};
    for (int r = 0; r < 12; ++r) block.compute_s[r] = r >= 8 ? 1.0 / 0.7 : 1.0;
    state.keep({block}, 1000 + 10 * b, 20);
  }
  auto read = rank_timing_from_blocks(state, {"node-1", "node-2", "node-3"});
  ASSERT_TRUE(read.error.empty()) << read.error;
  ASSERT_EQ(read.ranks.size(), 12u);
  EXPECT_EQ(read.ranks[3].host, "node-1");
  EXPECT_EQ(read.ranks[4].host, "node-2");
  EXPECT_EQ(read.ranks[11].host, "node-3");
  EXPECT_EQ(read.window, kLogBlocksJudged);
  EXPECT_DOUBLE_EQ(read.written, 1050);
  StragglerSettings s;
  s.window = s.min_samples = read.window;
  auto verdict = localise_stragglers(read.ranks, s);
  ASSERT_TRUE(verdict.suspect());
  EXPECT_EQ(verdict.suspect()->node, "node-3");
  EXPECT_EQ(rank_ranges(verdict.suspect()->ranks), "8-11");

  auto uneven = rank_timing_from_blocks(state, {"node-1", "node-2", "node-3", "node-4", "node-5"});
  EXPECT_TRUE(uneven.ranks.empty());
  EXPECT_NE(uneven.error.find("12 ranks over 5 nodes"), std::string::npos) << uneven.error;
}

// One misread line naming a huge rank does not make a job of that size.
TEST(MegatronRankTimes, ARankFarBeyondTheOthersIsAnErrorNotAWorld) {
  LogRankTimes state;
  state.keep({{1, {{0, 1.0}, {1, 1.0}, {900000, 1.0}}}}, 10, 20);
  auto read = rank_timing_from_blocks(state, {"node-1", "node-2"});
  EXPECT_TRUE(read.ranks.empty());
  EXPECT_NE(read.error.find("rank 900000"), std::string::npos) << read.error;
}

// Kept in the store between cycles: the blocks and the parser's place in a cut block come back
// whole; anything else gives nothing.
TEST(MegatronRankTimes, TheStoredRecordRestoresBlocksAndACutBlock) {
  LogRankTimes state;
  state.task = "7@1799999000";
  auto lines = fixture_lines();
  for (std::size_t i = 0; i < 70; ++i) state.parser.feed(lines[i]);  // into the second block
  state.keep(state.parser.take(), 1000.5, 15);
  auto back = LogRankTimes::from_json(state.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->task, "7@1799999000");
  ASSERT_EQ(back->blocks.size(), 1u);
  EXPECT_DOUBLE_EQ(back->blocks[0].first, 1000.5);
  EXPECT_NEAR(back->blocks[0].second.compute_s.at(7), state.blocks[0].second.compute_s.at(7), 1e-5);
  EXPECT_EQ(back->parser.place(), state.parser.place());
  // The rest of the cut block, read by the restored parser: one block with every rank.
  for (std::size_t i = 70; i < lines.size(); ++i) back->parser.feed(lines[i]);
  back->parser.feed("iteration 40");
  auto rest = back->parser.take();
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].compute_s.size(), 8u);
  EXPECT_EQ(rest[0].seq, 2);
  for (const char* junk : {"", "{}", "[1]", "{\"v\":1,\"task\":\"t\"}",
                           "{\"v\":1,\"task\":\"t\",\"parser\":{},\"blocks\":[]}", "nul",
                           "{\"v\":[\"node-1\"],\"task\":\"t\"}"})
    EXPECT_FALSE(LogRankTimes::from_json(junk)) << junk;
}

// The read names its version: the same while no interval is added (its verdict is kept, not
// judged again), another with a new interval or another task.
TEST(MegatronRankTimes, TheVersionMovesWithANewIntervalOrTaskOnly) {
  LogRankTimes state;
  state.task = "7@100";
  EXPECT_EQ(rank_timing_from_blocks(state, {"node-1"}).version, "");
  state.keep({{1, {{0, 1.0}, {1, 1.0}}}}, 10, 15);
  const std::string first = rank_timing_from_blocks(state, {"node-1", "node-2"}).version;
  EXPECT_EQ(rank_timing_from_blocks(state, {"node-1", "node-2"}).version, first);
  state.keep({{2, {{0, 1.0}, {1, 1.0}}}}, 20, 15);
  const std::string second = rank_timing_from_blocks(state, {"node-1", "node-2"}).version;
  EXPECT_NE(second, first);
  state.task = "7@200";  // requeued under its id
  EXPECT_NE(rank_timing_from_blocks(state, {"node-1", "node-2"}).version, second);
}

TEST(MegatronRankTimes, OnlyTheLastBlocksAreKept) {
  LogRankTimes state;
  for (int b = 1; b <= 30; ++b) state.keep({{b, {{0, 1.0}}}}, b, 20);
  ASSERT_EQ(state.blocks.size(), 20u);
  EXPECT_EQ(state.blocks.front().second.seq, 11);
}

}  // namespace
}  // namespace llmwatch
