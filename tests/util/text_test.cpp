// The text boundary: properties over random bytes, not only examples.
#include "util/text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "util/strings.h"

namespace llmwatch {
namespace {

std::string random_bytes(std::mt19937& rng, size_t max_len) {
  // Biased towards the bytes that make UTF-8 interesting: lead and continuation bytes.
  static const unsigned char kInteresting[] = {0xE2, 0x96, 0x88, 0xC2, 0x9B, 0x1B, 0xF0, 0x9F,
                                               0x98, 0x80, 0xED, 0xA0, 0x80, 0xC0, 0xFF, '\r'};
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<int> byte(0, 255), pick(0, 3);
  std::string s(len(rng), '\0');
  for (auto& c : s)
    c = static_cast<char>(pick(rng) == 0 ? kInteresting[static_cast<size_t>(byte(rng)) % 16]
                                         : byte(rng));
  return s;
}

TEST(Text, RandomBytesAlwaysBecomeValidUtf8AndTheBoundaryIsIdempotent) {
  std::mt19937 rng(20261122);
  for (int i = 0; i < 20000; ++i) {
    std::string raw = random_bytes(rng, 64);
    std::string v = valid_utf8(raw);
    ASSERT_TRUE(is_valid_utf8(v));
    EXPECT_EQ(valid_utf8(v), v);
    for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, raw.size() / 2, raw.size()}) {
      std::string t = truncate_utf8(raw, cut);
      ASSERT_TRUE(is_valid_utf8(t));
      ASSERT_LE(t.size(), cut);
      EXPECT_EQ(truncate_utf8(t, cut), t);
    }
    std::string term = terminal_safe(raw);
    ASSERT_TRUE(is_valid_utf8(term));
    EXPECT_EQ(term.find('\x1b'), std::string::npos);
    EXPECT_EQ(terminal_safe(term), term);
    EXPECT_EQ(slack_escape(slack_escape(raw)), slack_escape(raw));
    std::string line = sanitize_line(raw, static_cast<size_t>(i % 40));
    ASSERT_TRUE(is_valid_utf8(line));
    // No JSON dump can throw on content, and what it writes parses back.
    nlohmann::json j = {{"raw", raw}};
    nlohmann::json back;
    EXPECT_NO_THROW(back = nlohmann::json::parse(json_dump(j)));
    EXPECT_TRUE(back.is_object());
  }
}

TEST(Text, ValidTextIsKeptAsIs) {
  std::string s = "Epoch 0: 98%|█████▊| 98/100 — loss 7.3 ✓ 😀";
  EXPECT_TRUE(is_valid_utf8(s));
  EXPECT_EQ(valid_utf8(s), s);
  EXPECT_EQ(terminal_safe(s), s);
}

TEST(Text, InvalidSequencesAreReplacedOneByOne) {
  EXPECT_EQ(valid_utf8("a\xE2\x96z"), "a\xEF\xBF\xBD\xEF\xBF\xBDz");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));                    // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));                // above U+10FFFF
}

TEST(Text, TruncationCutsOnlyOnCharacterBoundaries) {
  std::string bar = "ab███";  // █ is 3 bytes
  EXPECT_EQ(truncate_utf8(bar, 4), "ab");
  EXPECT_EQ(truncate_utf8(bar, 5), "ab█");
  // The defect: sanitize_line cut a multi-byte character at byte 300, and every later JSON
  // dump of the cycle failed with "invalid UTF-8 byte at index 300: 0xE2".
  std::string line = std::string(299, 'x') + "█████";
  std::string cut = sanitize_line(line, 300);
  EXPECT_TRUE(is_valid_utf8(cut));
  std::string dumped;
  EXPECT_NO_THROW(dumped = nlohmann::json(cut).dump());
  EXPECT_FALSE(dumped.empty());
}

TEST(Text, TerminalEscapesAreShownNotInterpreted) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_safe("\xC2\x9B"
                          "31m"),
            "\\x9b31m");  // C1 CSI
  EXPECT_EQ(terminal_safe("tab\tok"), "tab\tok");
}

TEST(Text, DocumentsForTerminalsHaveNoEscapesLeft) {
  nlohmann::json j = {{"jobs", {{{"name", "evil\x1b]0;pwned\x07"}, {"n", 3}}}}, {"k\x1b[31m", "v"}};
  std::string dumped = terminal_safe_json(j).dump();
  EXPECT_EQ(dumped.find("\\u001b"), std::string::npos) << dumped;
  EXPECT_NE(dumped.find("evil\\\\x1b]0;pwned\\\\x07"), std::string::npos) << dumped;
  EXPECT_EQ(terminal_safe_json(j)["jobs"][0]["n"], 3);
}

TEST(Text, SlackMarkupInNamesIsText) {
  EXPECT_EQ(slack_escape("<!channel> a&b <http://x|y>"),
            "&lt;!channel&gt; a&amp;b &lt;http://x|y&gt;");
}

}  // namespace
}  // namespace llmwatch
