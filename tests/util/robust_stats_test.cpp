#include "util/robust_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace llmwatch {
namespace {

TEST(Median, OddEvenEmpty) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Mad, OneOutlierDoesNotMoveIt) {
  EXPECT_DOUBLE_EQ(mad({1, 1, 1, 1, 100}, 1), 0);
  EXPECT_DOUBLE_EQ(mad({1, 2, 3, 4, 5}, 3), 1);
}

// The sorted forms give exactly what the general ones give, ties, repeats, a centre outside the
// values and both counts' parities included.
TEST(SortedStats, AreExactlyTheGeneralOnesOverRandomSeries) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 5000; ++trial) {
    std::vector<double> v(std::uniform_int_distribution<int>(1, 40)(rng));
    for (auto& x : v) x = std::uniform_int_distribution<int>(0, 9)(rng) * 0.1;
    std::sort(v.begin(), v.end());
    ASSERT_EQ(sorted_median(v), median(v));
    for (double m : {median(v), v.front() - 1, v.back() + 1, 0.45})
      ASSERT_EQ(sorted_mad(v, m), mad(v, m)) << "trial " << trial << " m " << m;
  }
  EXPECT_EQ(sorted_median({}), 0);
  EXPECT_EQ(sorted_mad({}, 1), 0);
}

}  // namespace
}  // namespace llmwatch
