#include "util/robust_stats.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace llmwatch
