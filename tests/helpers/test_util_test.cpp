// The tests' own wait: it must find a condition that comes, and must not spend the CPU the
// things it waits on need (CI runs three cluster tests at once on two cores).
#include "test_util.h"

#include <gtest/gtest.h>

namespace llmwatch::testing {
namespace {

TEST(Eventually, FindsAConditionThatComesAndGivesUpOnOneThatDoesNot) {
  int polls = 0;
  EXPECT_TRUE(eventually([&] { return ++polls == 3; }, 10));
  EXPECT_EQ(polls, 3);
  EXPECT_FALSE(eventually([] { return false; }, 0));
}

// The defect: every 50 ms whatever a poll cost, so polls of a whole `llmwatch run --once`
// cycle took most of a core each. A poll that takes 30 ms is followed by a pause of at least
// 120 ms: at most 1 + 1000 / 150 of them fit in a second (the old wait made 13-14, 1 + 1000 / 80).
// An upper bound only, so a slow machine cannot fail it.
TEST(Eventually, PausesInProportionToWhatAPollCosts) {
  int polls = 0;
  EXPECT_FALSE(eventually(
      [&] {
        ++polls;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        return false;
      },
      1));
  EXPECT_LE(polls, 8);
  EXPECT_GE(polls, 2);
}

}  // namespace
}  // namespace llmwatch::testing
