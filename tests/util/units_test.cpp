#include "util/units.h"

#include <gtest/gtest.h>

namespace llmwatch {

TEST(Duration, ParsesUnitsAndCompounds) {
  EXPECT_EQ(parse_duration("90s")->count(), 90);
  EXPECT_EQ(parse_duration("15m")->count(), 900);
  EXPECT_EQ(parse_duration("2h")->count(), 7200);
  EXPECT_EQ(parse_duration("1d")->count(), 86400);
  EXPECT_EQ(parse_duration("1h30m")->count(), 5400);
  EXPECT_EQ(parse_duration("0")->count(), 0);  // zero in any unit
  EXPECT_EQ(parse_duration("1.5h")->count(), 5400);
  EXPECT_EQ(parse_duration("2w")->count(), 14 * 86400);
  EXPECT_EQ(parse_duration("5 minutes")->count(), 300);
  EXPECT_EQ(parse_duration("1h 30m")->count(), 5400);
}

// A bare number was silently taken as seconds: "5" meant for minutes watched a run with a
// five-second allowance (#26 B, #27). It says which unit to add.
TEST(Duration, ABareNumberNeedsAUnit) {
  auto bare = parse_duration(" 45 ");
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error(), "duration '45' needs a unit: '45s', '45m' or '45h'");
  EXPECT_FALSE(parse_duration("1.5"));
}

TEST(Duration, RejectsMalformedWithReason) {
  EXPECT_FALSE(parse_duration(""));
  auto unknown = parse_duration("10x");
  EXPECT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("unknown unit 'x'"), std::string::npos);
  for (const char* bad : {"m", "-5s", "1..2s", "5 10"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d) << bad;
    EXPECT_FALSE(d.error().empty()) << bad;
  }
}

TEST(Size, DecimalAndBinaryUnits) {
  EXPECT_EQ(*parse_size("500GiB"), 500ULL << 30);
  EXPECT_EQ(*parse_size("5TB"), 5'000'000'000'000ULL);
  EXPECT_EQ(*parse_size("1024"), 1024ULL);
  EXPECT_EQ(*parse_size("1.5 KiB"), 1536ULL);
  EXPECT_EQ(*parse_size("2k"), 2000ULL);
  EXPECT_EQ(*parse_size("1mib"), 1ULL << 20);
}

TEST(Size, RejectsMalformed) {
  EXPECT_FALSE(parse_size("GiB"));
  auto unknown = parse_size("5XB");
  EXPECT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("unknown unit"), std::string::npos);
  EXPECT_FALSE(parse_size("99999999EB"));
}

TEST(Percent, ParsesAndBounds) {
  EXPECT_DOUBLE_EQ(*parse_percent("85%"), 0.85);
  EXPECT_DOUBLE_EQ(*parse_percent("100"), 1.0);
  EXPECT_FALSE(parse_percent("101%"));
  EXPECT_FALSE(parse_percent("abc"));
  EXPECT_FALSE(parse_percent("5%%"));
}

TEST(Format, DurationsAndSizesReadWell) {
  EXPECT_EQ(format_duration(Seconds(0)), "0s");
  EXPECT_EQ(format_duration(Seconds(59)), "59s");
  EXPECT_EQ(format_duration(Seconds(3600 + 120)), "1h2m");
  EXPECT_EQ(format_duration(Seconds(86400 + 5)), "1d");  // two adjacent units at most
  EXPECT_EQ(format_size(1536), "1.5 KiB");
  EXPECT_EQ(format_size(12), "12 B");
}

}  // namespace llmwatch
