#include "rules/clock_rule.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

ClockReading at(double wall, double boot, const std::string& host = "mgmt-1",
                const std::string& boot_id = "b1") {
  return {host, boot_id, wall, boot};
}

TEST(ClockRule, SteadyClocksAreTrusted) {
  auto prev = at(1000, 50);
  EXPECT_TRUE(judge_clock(nullptr, at(1300, 350), 300).trusted);
  EXPECT_TRUE(judge_clock(&prev, at(1300, 350), 300).trusted);
  EXPECT_TRUE(judge_clock(&prev, at(1310, 350), 300).trusted);  // within the tolerance
}

TEST(ClockRule, AJumpOnTheSameBootIsMeasuredAndShifted) {
  auto prev = at(1000, 50);
  auto v = judge_clock(&prev, at(1000 + 300 + 600, 350), 300);  // NTP stepped +10 min
  EXPECT_FALSE(v.trusted);
  EXPECT_DOUBLE_EQ(v.shift, 600);
  EXPECT_NE(v.why.find("jumped +10m"), std::string::npos) << v.why;
  auto back = judge_clock(&prev, at(1000 + 300 - 120, 350), 300);
  EXPECT_DOUBLE_EQ(back.shift, -120);
}

TEST(ClockRule, AnAbnormalGapIsUntrustedOnce) {
  auto prev = at(1000, 50);
  auto same = judge_clock(&prev, at(1000 + 3600, 50 + 3600), 300);  // llmwatch was stopped
  EXPECT_FALSE(same.trusted);
  EXPECT_DOUBLE_EQ(same.shift, 0);  // same boot: the time really passed
  // Another host (a self-job on another node): the gap cannot be told from a clock offset,
  // and the time nobody watched does not count as idle.
  auto other = judge_clock(&prev, at(1000 + 300 + 600, 9, "node-7", "b9"), 300);
  EXPECT_FALSE(other.trusted);
  EXPECT_DOUBLE_EQ(other.shift, 600);
  EXPECT_TRUE(judge_clock(&prev, at(1000 + 300, 9, "node-7", "b9"), 300).trusted);
}

TEST(ClockRule, ReadingsRoundTrip) {
  ClockReading r = at(1.5, 2.5), back;
  ASSERT_TRUE(ClockReading::from_json(r.to_json(), &back));
  EXPECT_EQ(back.host, "mgmt-1");
  EXPECT_DOUBLE_EQ(back.boot, 2.5);
  EXPECT_FALSE(ClockReading::from_json("", &back));
  EXPECT_FALSE(ClockReading::from_json("{\"wall\": \"x\"}", &back));
}

}  // namespace
}  // namespace llmwatch
