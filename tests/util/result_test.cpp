#include "util/result.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace llmwatch {
namespace {

Result<int> half(int n) {
  if (n % 2) return Error{std::to_string(n) + " is odd"};
  return n / 2;
}

TEST(Result, HoldsAValueOrTheReasonThereIsNone) {
  auto ok = half(8);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 4);
  EXPECT_TRUE(ok == 4);
  EXPECT_EQ(ok.error(), "");
  auto bad = half(3);
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.error(), "3 is odd");
  EXPECT_EQ(bad.value_or(-1), -1);
  EXPECT_FALSE(bad == 0);
}

// Reading the value of a failure is a broken invariant: it throws (and a failure domain
// turns it into that domain's error), never reads garbage.
TEST(Result, TheValueOfAFailureThrows) {
  auto bad = half(3);
  EXPECT_THROW((void)bad.value(), std::logic_error);
  EXPECT_THROW((void)*bad, std::logic_error);
}

TEST(Status, IsSuccessUnlessAnErrorWasGiven) {
  Status fine;
  EXPECT_TRUE(fine);
  EXPECT_EQ(fine.error(), "");
  Status refused = Error{"scontrol: Invalid node name"};
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.error(), "scontrol: Invalid node name");
  Status unnamed = Error{""};  // a failure never reads as success
  EXPECT_FALSE(unnamed);
  EXPECT_EQ(unnamed.error(), "failed");
}

}  // namespace
}  // namespace llmwatch
