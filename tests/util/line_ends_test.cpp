#include "util/line_ends.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace llmwatch {
namespace {

// The plain answer: every '\n' and '\r', and whether any byte is outside ASCII.
std::pair<std::vector<size_t>, bool> reference(const std::string& s, size_t from, size_t to) {
  std::vector<size_t> ends;
  bool high = false;
  for (size_t i = from; i < to; ++i) {
    if (s[i] == '\n' || s[i] == '\r') ends.push_back(i);
    high |= static_cast<unsigned char>(s[i]) >= 0x80;
  }
  return {ends, high};
}

// The property: on any bytes and any range (the vector blocks, their edges, the tail), the
// scan finds exactly the plain answer.
TEST(LineEnds, FindsWhatAByteByByteScanFinds) {
  std::mt19937 rng(7);
  const std::string alphabet = std::string("ab \n\r\xE2\x96\x88", 8);
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 300, 'x');
    for (auto& c : s) c = rng() % 4 ? 'a' : alphabet[rng() % alphabet.size()];
    size_t from = s.empty() ? 0 : rng() % s.size();
    size_t to = from + (s.size() == from ? 0 : rng() % (s.size() - from + 1));
    std::vector<size_t> ends;
    bool high = scan_line_ends(s.data(), from, to, [&](size_t i) { ends.push_back(i); });
    auto [want_ends, want_high] = reference(s, from, to);
    ASSERT_EQ(ends, want_ends) << "round " << round;
    ASSERT_EQ(high, want_high) << "round " << round;
  }
}

TEST(LineEnds, AHighByteInTheLastVectorBlockIsSeen) {
  std::string s(128, 'a');
  s[127] = '\xC3';
  EXPECT_TRUE(scan_line_ends(s.data(), 0, s.size(), [](size_t) {}));
  EXPECT_FALSE(scan_line_ends(s.data(), 0, 127, [](size_t) {}));
}

}  // namespace
}  // namespace llmwatch
