// Evict a slow node only when it pays (#28): the saving over the remaining time against the
// measured restart cost, and never on an unknown.
#include "policy/eviction_cost.h"

#include <gtest/gtest.h>

#include <random>

namespace llmwatch {
namespace {

TEST(EvictionCost, TheIssuesExampleEvictsAndSaysTheSum) {
  EvictionCase c;
  c.speed = 0.71;
  c.remaining_s = 0.71 * 4 * 3600;  // 4 h left at 0.71x
  c.save_s = 60;
  c.restart_s = 6 * 60;
  c.lost_work_s = 2 * 60;
  auto v = judge_eviction(c);
  EXPECT_TRUE(v.evict);
  EXPECT_EQ(v.text, "evict: saves ≈ 1h9m of 4h remaining at 0.71×; restart costs ≈ 9m");
}

TEST(EvictionCost, ShortRemainingTimeKeepsTheNode) {
  EvictionCase c;
  c.speed = 0.9;
  c.remaining_s = 1800;  // saving 200 s
  c.restart_s = 300;
  auto v = judge_eviction(c);
  EXPECT_FALSE(v.evict);
  EXPECT_EQ(v.text.rfind("keep: saves", 0), 0u) << v.text;
}

TEST(EvictionCost, UnknownFiguresNeverEvict) {
  EvictionCase c;
  c.speed = 0.5;
  c.restart_s = 60;
  EXPECT_FALSE(judge_eviction(c).evict) << "remaining unknown";
  c.remaining_s = 1e6;
  c.restart_s = -1;
  EXPECT_FALSE(judge_eviction(c).evict) << "restart cost unknown";
  c.restart_s = NAN;
  EXPECT_FALSE(judge_eviction(c).evict);
  c.restart_s = 60;
  c.speed = 1.0;
  EXPECT_FALSE(judge_eviction(c).evict) << "not slower";
  c.speed = NAN;
  EXPECT_FALSE(judge_eviction(c).evict);
}

// The property: whatever the figures, an eviction's saving exceeds its cost by the margin.
TEST(EvictionCost, NeverEvictsWhenTheSavingIsBelowTheCost) {
  std::mt19937 rng(28);
  std::uniform_real_distribution<double> speed(0.01, 1.2), secs(0, 20 * 3600), margin(0, 2);
  int evicted = 0;
  for (int i = 0; i < 100000; ++i) {
    EvictionCase c{speed(rng),     secs(rng),     secs(rng) / 20,
                   secs(rng) / 10, secs(rng) / 5, margin(rng)};
    auto v = judge_eviction(c);
    if (!v.evict) continue;
    ++evicted;
    double cost = c.save_s + c.restart_s + c.lost_work_s;
    ASSERT_GT(c.remaining_s * (1 / c.speed - 1), cost * (1 + c.margin));
    ASSERT_LT(c.speed, 1);
  }
  EXPECT_GT(evicted, 0) << "the property is not vacuous";
}

}  // namespace
}  // namespace llmwatch
