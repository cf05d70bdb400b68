// The text log escapes what it prints at the sink: a caller that logs outside bytes raw (an
// action's outcome with a user's script path) cannot reach the operator's terminal (#26 B).
#include <gtest/gtest.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>

#include "app/commands.h"

namespace llmwatch {
namespace {

TEST(Logging, TheTextSinkEscapesEveryMessageOnce) {
  auto formatter = text_log_formatter();
  std::string raw = "restart done: resubmitted /home/u/\x1b]0;pwned\x07train.sh\n\x1b[2Jx \xff";
  spdlog::details::log_msg msg("llmwatch", spdlog::level::info, raw);
  spdlog::memory_buf_t out;
  formatter->format(msg, out);
  std::string line(out.data(), out.size());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  line.pop_back();
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x07'), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one record, one line: " << line;
  EXPECT_NE(line.find("resubmitted /home/u/\\x1b]0;pwned"), std::string::npos) << line;
  EXPECT_NE(line.find(" info "), std::string::npos) << line;
  // The level keeps its colour range for the colour sink.
  EXPECT_LT(msg.color_range_start, msg.color_range_end);
}

}  // namespace
}  // namespace llmwatch
