#include "util/strings.h"

#include <gtest/gtest.h>

namespace llmwatch {

TEST(Strings, ClosestMatchFindsTyposOnly) {
  std::vector<std::string> keys = {"interval", "state_dir", "dry_run"};
  EXPECT_EQ(closest_match("intervl", keys), "interval");
  EXPECT_EQ(closest_match("statedir", keys), "state_dir");
  EXPECT_EQ(closest_match("completely_else", keys), "");
}

TEST(Strings, ExpandEnvReportsMissing) {
  setenv("LW_T1", "abc", 1);
  std::vector<std::string> missing;
  EXPECT_EQ(expand_env("x${LW_T1}y${LW_NOPE_NOPE}z", &missing), "xabcyz");
  EXPECT_EQ(missing, std::vector<std::string>{"LW_NOPE_NOPE"});
  EXPECT_EQ(expand_env("${unterminated", nullptr), "${unterminated");
}

TEST(Strings, SanitizeReplacesControlBytesAndCaps) {
  EXPECT_EQ(sanitize_line("a\x1b[31mb\x01", 100), "a?[31mb?");
  EXPECT_EQ(sanitize_line(std::string(10, 'x'), 4), "xxxx…");
}

}  // namespace llmwatch
