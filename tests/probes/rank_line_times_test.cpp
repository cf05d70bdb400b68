// Each rank's own timing line in the log (#28): `[rank12]:` (torchrun) or srun --label's
// `12: `, a step and a compute time with its unit; gathered by step, placed by layout and
// judged as Megatron's timers are.
#include "probes/rank_line_times.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "probes/megatron_rank_times.h"
#include "rank_timing_sim.h"
#include "rules/straggler.h"

namespace llmwatch {
namespace {

TEST(RankLineTimes, EachRanksLineGivesItsRankStepAndComputeInSeconds) {
  struct Case {
    const char* line;
    int rank;
    std::int64_t step;
    double compute_s;
  } cases[] = {
      {"[rank12]: iteration 340 | forward-compute 612.3 ms | backward-compute 1203.7 ms", 12, 340,
       1.816},
      {"[rank3]: step 17 compute_ms=250", 3, 17, 0.25},
      {"  7: step: 9 | compute time: 0.61s | wait 0.02 s", 7, 9, 0.61},  // srun --label, padded
      {"12: iteration      40/  500000 | compute (ms): 500.0 | loss 2.31", 12, 40, 0.5},
      {"[rank0]: Step 5 COMPUTE_S=1.5 data_s=0.1", 0, 5, 1.5},
      {"3: [rank13]: global_step=8 compute 0.4 s", 13, 8, 0.4},  // srun over torchrun
      {"[rank2]: step 4 compute 612.3", 2, 4, -1},               // no unit: never guessed
  };
  for (const auto& c : cases) {
    auto got = parse_rank_line(c.line);
    ASSERT_TRUE(got) << c.line;
    EXPECT_EQ(got->rank, c.rank) << c.line;
    EXPECT_EQ(got->step, c.step) << c.line;
    EXPECT_NEAR(got->compute_s, c.compute_s, 1e-9) << c.line;
  }
}

TEST(RankLineTimes, LinesThatAreNotARanksTimingAreNotRead) {
  for (const char* line : {
           "iteration 340 | compute 0.6 s",                // no rank prefix
           "[default0]: iteration 340 | compute 0.6 s",    // a local rank, on every node
           "12:34:56 step 3 compute 0.6 s",                // a clock, not srun's label
           "[rank4]:[W1125 10:00:11] warnings.warn(...)",  // a rank's line, no timing
           "[rank4]: step 3 | forward-compute 600 ms",     // half of Megatron's pair
           "[rank4]: steps 3 compute 0.6 s",               // no step
           "[rank4]: step 3 computed 0.6 s",               // not the compute field
           "[rank99999999]: step 3 compute 0.6 s",         // beyond any world
           "[rank4]: step 3 compute -0.6 s",               // negative
           "[rank4]: step 3 forward-compute 1e308 s backward-compute 1e308 s",  // not finite
       })
    EXPECT_FALSE(parse_rank_line(line)) << line;
}

// Ranks' lines interleave. A step is taken once every rank seen has printed it and a later step
// began; a rank whose line comes late does not hold the others back beyond kOpenSteps.
TEST(RankLineTimes, AStepIsTakenWhenEveryRankPrintedItOrItFellBehind) {
  RankLineTimes t;
  auto line = [](int rank, int step, double ms) {
    return "[rank" + std::to_string(rank) + "]: step " + std::to_string(step) +
           " compute_ms=" + std::to_string(ms);
  };
  for (int rank : {1, 0, 3, 2}) t.feed(line(rank, 1, 100 + rank));
  EXPECT_TRUE(t.take().empty()) << "step 1 waits for a later step: a rank may still print it";
  t.feed(line(0, 2, 100));
  auto taken = t.take();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].seq, 1);
  EXPECT_EQ(taken[0].compute_s.size(), 4u);
  EXPECT_NEAR(taken[0].compute_s.at(3), 0.103, 1e-9);
  // Rank 3 falls silent from step 2: its step stays open until kOpenSteps later ones began.
  for (int step = 2; step <= 6; ++step)
    for (int rank : {0, 1, 2}) t.feed(line(rank, step, 100));
  taken = t.take();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].seq, 2);
  EXPECT_EQ(taken[0].compute_s.size(), 3u);
  // Its late line for step 2 is dropped (judged without it); for step 4 it is kept.
  t.feed(line(3, 2, 100));
  t.feed(line(3, 4, 100));
  for (int rank : {0, 1, 2, 3}) t.feed(line(rank, 7, 100));
  taken = t.take();
  ASSERT_GE(taken.size(), 1u);
  EXPECT_EQ(taken[0].seq, 3);
  EXPECT_EQ(taken[1].seq, 4);
  EXPECT_EQ(taken[1].compute_s.size(), 4u);
}

// 16 ranks on 4 nodes, each printing its own line each step; the ranks of the third node
// compute 1.4x longer. Placed by block layout, as srun places tasks, that node is named.
TEST(RankLineTimes, TheSlowNodesRanksAreNamedFromTheirOwnLines) {
  LogRankTimes state;
  state.task = "7@100";
  std::mt19937 rng(30);
  std::lognormal_distribution<double> jitter(0, 0.05);
  for (int step = 1; step <= 70; ++step) {
    for (int rank = 0; rank < 16; ++rank) {
      double ms = 500 * jitter(rng) * (rank / 4 == 2 ? 1.4 : 1.0);
      state.feed("[rank" + std::to_string(rank) + "]: iteration " + std::to_string(step) +
                 " | compute " + std::to_string(ms) + " ms");
    }
    if (step % 5 == 0) state.keep_taken(1000 + step);
  }
  EXPECT_EQ(state.blocks.size(), kLineStepsKept) << "three windows of steps are kept";
  auto read = rank_timing_from_blocks(state, {"node-1", "node-2", "node-3", "node-4"});
  ASSERT_TRUE(read.error.empty()) << read.error;
  EXPECT_TRUE(read.placed_by_layout);
  EXPECT_EQ(read.window, kLineStepsJudged);
  StragglerSettings s;
  s.window = s.min_samples = read.window;
  auto verdict = localise_stragglers(read.ranks, s);
  const NodeSpeed* suspect = verdict.suspect();
  ASSERT_TRUE(suspect) << verdict.not_judged;
  EXPECT_EQ(suspect->node, "node-3");
  EXPECT_EQ(rank_ranges(suspect->ranks), "8-11");
  for (const auto& n : verdict.nodes) {
    if (n.node != "node-3") {
      EXPECT_FALSE(n.suspect) << n.node;
    }
  }
}

// The noise property, through the lines: 1,000 healthy jobs (log-normal ±10% jitter, a
// checkpoint, an evaluation, a data-loader hiccup on one rank, a rank whose last lines are not
// written yet), each rank's line printed per step in a shuffled order and read a few steps at a
// time: no suspect. And the same with one node at 0.7x names that node.
TEST(RankLineTimes, HealthyNoiseThroughTheLinesNamesNoNode) {
  std::mt19937 rng(2811);
  std::uniform_int_distribution<int> nodes(2, 8), per_node(1, 8), steps(30, 90), chunk(1, 7);
  int suspects = 0, found = 0, slow_runs = 0, judged = 0;
  for (int cycle = 0; cycle < 1000 && suspects <= 3; ++cycle) {
    testing::TimingSim sim;
    sim.nodes = nodes(rng);
    sim.ranks_per_node = per_node(rng);
    sim.steps = steps(rng);
    const bool slow = cycle % 10 == 9 && sim.steps >= 3 * static_cast<int>(kLineStepsJudged);
    if (slow) {
      sim.slow_node = "node-2";
      sim.slow_speed = 0.7;
      ++slow_runs;
    }
    std::map<std::int64_t, std::vector<std::string>> by_step;
    for (const auto& r : sim.run(rng))
      for (const auto& x : r.samples)
        by_step[x.step].push_back("[rank" + std::to_string(r.rank) + "]: step " +
                                  std::to_string(x.step) + " | compute " +
                                  std::to_string(x.compute_s * 1000) + " ms");
    LogRankTimes state;
    state.task = "1@1";
    int until_read = chunk(rng);
    for (auto& [step, lines] : by_step) {
      std::shuffle(lines.begin(), lines.end(), rng);
      for (const auto& line : lines) state.feed(line);
      if (--until_read == 0) {
        state.keep_taken(1000 + static_cast<double>(step));
        until_read = chunk(rng);
      }
    }
    state.keep_taken(5000);
    std::vector<std::string> hosts;
    for (int n = 1; n <= sim.nodes; ++n) hosts.push_back("node-" + std::to_string(n));
    auto read = rank_timing_from_blocks(state, hosts);
    ASSERT_TRUE(read.error.empty()) << read.error;
    StragglerSettings s;  // as the cycle sets them (cycle/checks/straggler_judge.cpp)
    s.window = s.min_samples = read.window;
    auto v = localise_stragglers(read.ranks, s);
    judged += v.not_judged.empty();
    if (slow) {
      found += v.suspect() && v.suspect()->node == "node-2";
    } else if (v.suspect()) {
      ++suspects;
      ADD_FAILURE() << "cycle " << cycle << ": " << straggler_summary(*v.suspect());
    }
  }
  EXPECT_EQ(suspects, 0);
  EXPECT_GT(judged, 900) << "too few steps or nodes to judge is not a pass";
  EXPECT_EQ(found, slow_runs);
  EXPECT_GT(slow_runs, 20);
}

TEST(RankLineTimes, AComputeTimeWithoutAUnitIsSaidNotGuessed) {
  LogRankTimes state;
  for (int step = 1; step <= 3; ++step)
    for (int rank = 0; rank < 4; ++rank)
      state.feed("[rank" + std::to_string(rank) + "]: step " + std::to_string(step) +
                 " compute 0.5");
  state.keep_taken(100);
  auto read = rank_timing_from_blocks(state, {"node-1", "node-2"});
  EXPECT_TRUE(read.ranks.empty());
  EXPECT_NE(read.error.find("without its unit"), std::string::npos) << read.error;
}

// `run --once` is a new process each cycle: the steps still open come back from the store.
TEST(RankLineTimes, OpenStepsAreKeptAcrossProcesses) {
  LogRankTimes state;
  state.task = "7@100";
  for (int rank : {0, 1, 2, 3})
    state.feed("[rank" + std::to_string(rank) + "]: step 1 compute 0.5 s");
  state.feed("[rank0]: step 2 compute 0.5 s");
  state.feed("[rank1]: step 2 compute 0.5 s");
  state.keep_taken(100);
  ASSERT_EQ(state.blocks.size(), 1u);
  auto back = LogRankTimes::from_json(state.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->place(), state.place());
  EXPECT_TRUE(back->from_rank_lines());
  back->feed("[rank2]: step 2 compute 0.5 s");
  back->feed("[rank3]: step 2 compute 0.5 s");
  back->feed("[rank0]: step 3 compute 0.5 s");
  auto taken = back->lines.take();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].seq, 2);
  EXPECT_EQ(taken[0].compute_s.size(), 4u) << "step 2's first two ranks came back from the store";
  // A step whose first lines are not rank 0's (kept as rank and time pairs) comes back the same.
  back->feed("[rank3]: step 4 compute 0.25 s");
  back->feed("[rank1]: step 4 compute 0.75 s");
  auto again = LogRankTimes::from_json(back->to_json());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->to_json(), back->to_json());
  EXPECT_NE(back->to_json().find("[1,750.0,3,250.0]"), std::string::npos) << back->to_json();
  // A record written before rank lines were read still restores.
  auto old = nlohmann::json::parse(state.to_json());
  old.erase("lines");
  EXPECT_TRUE(LogRankTimes::from_json(old.dump()));
}

}  // namespace
}  // namespace llmwatch
