// Fail-slow localisation (#28): the slow node is named with its evidence and no other node is,
// and healthy jobs with realistic noise give no suspect at all.
#include "rules/straggler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "rank_timing_sim.h"
#include "test_util.h"

namespace llmwatch {
namespace {

using testing::TimingSim;

TEST(Straggler, TheSlowNodeIsNamedAndNoOtherIs) {
  std::mt19937 rng(7);
  TimingSim sim;
  sim.slow_node = "node-3";
  sim.slow_speed = 0.8;
  auto v = localise_stragglers(sim.run(rng));
  ASSERT_TRUE(v.suspect()) << v.not_judged;
  EXPECT_EQ(v.suspect()->node, "node-3");
  EXPECT_NEAR(v.suspect()->relative, 0.8, 0.06);
  EXPECT_EQ(rank_ranges(v.suspect()->ranks), "16-23");
  int suspects = 0;
  for (const auto& n : v.nodes) suspects += n.suspect;
  EXPECT_EQ(suspects, 1);
}

// Slow only since the middle of the window: slow against its peers and against its own best.
// Slow from its first step: still slow against its peers, and the summary says so.
TEST(Straggler, TheIndividualScoreTellsANodeThatTurnedSlowFromOneThatAlwaysWas) {
  std::mt19937 rng(11);
  TimingSim sim;
  sim.noise_events = false;
  sim.steps = 80;
  sim.slow_node = "node-2";
  sim.slow_speed = 0.7;
  sim.slow_from_step = 50;
  auto turned = localise_stragglers(sim.run(rng));
  ASSERT_TRUE(turned.suspect());
  EXPECT_LT(turned.suspect()->individual, 0.8);
  EXPECT_NE(straggler_summary(*turned.suspect()).find("its own best"), std::string::npos);
  sim.slow_from_step = 0;
  auto always = localise_stragglers(sim.run(rng));
  ASSERT_TRUE(always.suspect());
  EXPECT_GT(always.suspect()->individual, 0.9);
  EXPECT_NE(straggler_summary(*always.suspect()).find("all along"), std::string::npos);
}

// The property: 1,000 cycles of healthy multi-rank jobs with realistic jitter and
// noise events give 0 suspects.
TEST(Straggler, HealthyJobsWithRealisticNoiseNeverHaveASuspect) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> nodes(2, 16), per_node(1, 8), steps(10, 120);
  int suspects = 0;
  for (int cycle = 0; cycle < 1000; ++cycle) {
    TimingSim sim;
    sim.nodes = nodes(rng);
    sim.ranks_per_node = per_node(rng);
    sim.steps = steps(rng);
    auto v = localise_stragglers(sim.run(rng));
    if (v.suspect()) {
      ++suspects;
      ADD_FAILURE() << "cycle " << cycle << ": " << straggler_summary(*v.suspect());
    }
    if (suspects > 3) break;
  }
  EXPECT_EQ(suspects, 0);
}

// Every slowdown from 0.5× to 0.8× on one node of a healthy-noise job is found, and named right.
TEST(Straggler, SlowdownsFromHalfToFourFifthsAreFound) {
  std::mt19937 rng(5);
  for (double speed : {0.5, 0.6, 0.7, 0.8})
    for (int i = 0; i < 50; ++i) {
      TimingSim sim;
      sim.slow_node = "node-1";
      sim.slow_speed = speed;
      auto v = localise_stragglers(sim.run(rng));
      ASSERT_TRUE(v.suspect()) << speed;
      EXPECT_EQ(v.suspect()->node, "node-1");
    }
}

TEST(Straggler, TooLittleEvidenceIsNotJudged) {
  std::mt19937 rng(1);
  TimingSim one_node;
  one_node.nodes = 1;
  EXPECT_FALSE(localise_stragglers(one_node.run(rng)).not_judged.empty());
  TimingSim few_steps;
  few_steps.steps = 4;
  few_steps.noise_events = false;
  few_steps.slow_node = "node-1";
  few_steps.slow_speed = 0.5;
  EXPECT_FALSE(localise_stragglers(few_steps.run(rng)).suspect());
  // A rank that names no host cannot be placed on a node.
  auto ranks = TimingSim{}.run(rng);
  for (auto& r : ranks) r.host.clear();
  EXPECT_FALSE(localise_stragglers(ranks).suspect());
}

// Both sources of a real run's timing name node-3, at a speed within [low, high] of the job's
// median, and no other node.
void expect_node_3_named(const std::string& dir, double low = 0.6, double high = 0.75) {
  auto expect_node_3 = [&](const StragglerVerdict& v, const char* from) {
    SCOPED_TRACE(from);
    ASSERT_TRUE(v.suspect()) << v.not_judged;
    EXPECT_EQ(v.suspect()->node, "node-3");
    EXPECT_EQ(v.suspect()->ranks, std::vector<int>{2});
    EXPECT_GT(v.suspect()->relative, low);
    EXPECT_LT(v.suspect()->relative, high);
    int suspects = 0;
    for (const auto& n : v.nodes) suspects += n.suspect;
    EXPECT_EQ(suspects, 1);
  };
  auto summary = read_rank_timing(dir);
  ASSERT_EQ(summary.error, "");
  ASSERT_TRUE(summary.windows);
  expect_node_3(judge_nodes(*summary.windows), "summary.json");
  // Written before the task began, the summary is not read: the ranks' own files are.
  auto files = read_rank_timing(dir, 6 << 10, 4096, summary.written + 1);
  ASSERT_EQ(files.error, "");
  ASSERT_FALSE(files.windows);
  ASSERT_EQ(files.ranks.size(), 4u);
  EXPECT_EQ(files.bad_lines, 0);
  expect_node_3(localise_stragglers(files.ranks), "rank files");
}

// A real run (bench/gpu_capture.sh on an H200): 4 ranks named node-1..4 share the GPU, each
// times its data loading and bf16 matmuls with the helper and waits in a gloo all-reduce. From
// its 30th second three processes compete for node-3's CPU: its compute rose from ~0.11 to
// ~0.13 s while the others' fell to ~0.09 s (they had the GPU more to themselves), and it
// stopped waiting while they waited ~55 ms. The job's step rose from 0.114 to 0.138 s. Both what
// the ranks wrote (their files' last steps, as llmwatch reads them) and rank 0's summary name
// node-3, and no other node.
TEST(Straggler, ARealCpuStarvedNodeIsNamedFromTheRanksFilesAndFromTheSummary) {
  // The same run with the helper in events mode (sections timed by CUDA events, nothing
  // synchronised; its waits are the GPU's idle time): the same node, from both sources.
  for (const char* run :
       {"rank-timing/h200-cpu-starved-node-3", "rank-timing/h200-cpu-starved-node-3-events"}) {
    SCOPED_TRACE(run);
    expect_node_3_named(testing::fixture(run));
  }
}

// The same script on a real H100 (driver 580.159.04), where the three competing processes
// starved node-3 harder: 24 s into the steps its compute rose from 0.132 to 0.168 s a step
// (medians) while the others' fell to 0.095-0.100 s and they waited ~80 ms for it. The job's
// step rose from 0.133 to 0.172 s. Node-3 runs at ~0.46x the job's median: named from both
// sources, and no other node.
TEST(Straggler, ARealCpuStarvedNodeOnAnH100IsNamedFromBothSources) {
  expect_node_3_named(testing::fixture("rank-timing/h100-cpu-starved-node-3"), 0.4, 0.52);
}

// The cycle keeps whole only the nodes its views show (`keep`): they are the whole verdict's
// slowest, with the same scores and ranks, and every other node is still named, in the same
// order, so a timing naming a node outside the task and the suspect's peers are still seen.
TEST(Straggler, KeepingTheSlowestNodesWholeKeepsEveryNodesName) {
  std::mt19937 rng(31);
  for (int job = 0; job < 40; ++job) {
    TimingSim sim;
    sim.nodes = 2 + job % 20;
    sim.ranks_per_node = 1 + job % 8;
    if (job % 3) {
      sim.slow_node = "node-" + std::to_string(1 + job % sim.nodes);
      sim.slow_speed = 0.6;
    }
    RankWindows windows = rank_windows(sim.run(rng));
    auto rows = parse_timing_summary(testing::summary_json_v2(windows, 1.8e9, 42));
    ASSERT_TRUE(rows.error.empty()) << rows.error;
    for (const RankWindows* from : {&windows, &rows.windows}) {
      SCOPED_TRACE(from == &windows ? "rank windows" : "summary rows");
      StragglerSettings whole, kept;
      kept.keep = 3;
      auto all = judge_nodes(*from, whole);
      auto few = judge_nodes(*from, kept);
      EXPECT_TRUE(all.more.empty());
      ASSERT_EQ(few.nodes.size(), std::min<std::size_t>(3, all.nodes.size())) << job;
      ASSERT_EQ(few.judged(), all.judged()) << job;
      EXPECT_EQ(few.window_s, all.window_s);
      EXPECT_EQ(few.suspect() != nullptr, all.suspect() != nullptr) << job;
      for (std::size_t i = 0; i < few.nodes.size(); ++i) {
        EXPECT_EQ(few.nodes[i].node, all.nodes[i].node);
        EXPECT_EQ(few.nodes[i].relative, all.nodes[i].relative);
        EXPECT_EQ(few.nodes[i].ranks, all.nodes[i].ranks);
        EXPECT_EQ(few.nodes[i].suspect, all.nodes[i].suspect);
      }
      std::vector<std::string> names_all, names_few;
      all.for_each_name([&](const std::string& n) { names_all.push_back(n); });
      few.for_each_name([&](const std::string& n) { names_few.push_back(n); });
      // The kept first, in the same order; the others in no order.
      ASSERT_EQ(names_few.size(), names_all.size()) << job;
      EXPECT_TRUE(
          std::equal(names_few.begin(), names_few.begin() + few.nodes.size(), names_all.begin()))
          << job;
      std::sort(names_few.begin() + few.nodes.size(), names_few.end());
      std::sort(names_all.begin() + few.nodes.size(), names_all.end());
      EXPECT_EQ(names_few, names_all) << job;
    }
  }
}

TEST(Straggler, TheFindingNamesTheNodeAsItsEpisode) {
  NodeSpeed n;
  n.node = "node-3";
  n.relative = 0.71;
  n.individual = 0.74;
  n.compute_ratio = 1.41;
  n.ranks = {12, 13, 14, 15};
  n.window_s = 720;
  auto f = straggler_finding("tr", n);
  EXPECT_EQ(f.key, "job:tr/straggler");
  EXPECT_EQ(f.episode, "node-3");
  EXPECT_EQ(f.summary,
            "slow node node-3: 0.71× the job median over 12m, ranks 12-15 compute 1.41× median "
            "(0.74× its own best)");
  // A window whose samples were all seen in one read (Megatron's intervals caught up at once)
  // spans under a second: no "over 0s".
  n.window_s = 0.4;
  EXPECT_EQ(straggler_finding("tr", n).summary.find(" over "), std::string::npos)
      << straggler_finding("tr", n).summary;
}

}  // namespace
}  // namespace llmwatch
