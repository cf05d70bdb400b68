#include "probes/log_tail.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "test_util.h"
#include "util/text.h"

namespace llmwatch {
namespace {

// A chunk's lines as strings, to compare with expected ones.
std::vector<std::string> lines_of(const LogChunk& c) {
  return {c.lines.begin(), c.lines.end()};
}

using testing::TempDir;
using testing::write_file;

TEST(LogTail, ReadsOnlyWhatWasAppended) {
  TempDir dir;
  std::string path = dir / "log";
  write_file(path, "a\nb\n");
  LogCursor cursor;
  auto first = read_appended(path, cursor);
  EXPECT_EQ(lines_of(first), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(first.bytes_read, 4u);
  write_file(path, "c\n", true);
  auto second = read_appended(path, cursor);
  EXPECT_EQ(lines_of(second), std::vector<std::string>{"c"});
  EXPECT_EQ(second.bytes_read, 2u);  // never re-reads
  EXPECT_EQ(read_appended(path, cursor).bytes_read, 0u);
}

// #30: the file's last write, stat'ed after the read, clocks the lines read.
TEST(LogTail, TheChunkCarriesTheFilesLastWrite) {
  TempDir dir;
  std::string path = dir / "log";
  write_file(path, "a\n");
  struct timespec times[2] = {{1700000000, 0}, {1700000123, 500000000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  LogCursor cursor;
  EXPECT_DOUBLE_EQ(read_appended(path, cursor).mtime, 1700000123.5);
}

TEST(LogTail, PartialLineWaitsForItsNewline) {
  TempDir dir;
  std::string path = dir / "log";
  write_file(path, "one\ntw");
  LogCursor cursor;
  EXPECT_EQ(lines_of(read_appended(path, cursor)), std::vector<std::string>{"one"});
  write_file(path, "o\r\n", true);
  EXPECT_EQ(lines_of(read_appended(path, cursor)), std::vector<std::string>{"two"});
}

TEST(LogTail, TruncationAndReplacementStartOver) {
  TempDir dir;
  std::string path = dir / "log";
  write_file(path, "old line 1\nold line 2\n");
  LogCursor cursor;
  read_appended(path, cursor);
  write_file(path, "new\n");  // truncated in place, shorter
  auto truncated = read_appended(path, cursor);
  EXPECT_TRUE(truncated.reset);
  EXPECT_EQ(lines_of(truncated), std::vector<std::string>{"new"});
  // Replaced by a new file (logrotate's create mode): a new inode.
  write_file(dir / "log.new", "rotated 1\nrotated 2 which is longer than before\n");
  std::rename((dir / "log.new").c_str(), path.c_str());
  auto replaced = read_appended(path, cursor);
  EXPECT_TRUE(replaced.reset);
  EXPECT_EQ(replaced.lines.size(), 2u);
}

TEST(LogTail, HugeFileFirstLookReadsOnlyTheTail) {
  TempDir dir;
  std::string path = dir / "log";
  std::string body;
  for (int i = 0; i < 20000; ++i) body += "line " + std::to_string(i) + "\n";
  write_file(path, body);
  LogCursor cursor;
  LogTailLimits limits;
  limits.max_bytes_per_read = 1000;
  auto chunk = read_appended(path, cursor, limits);
  EXPECT_TRUE(chunk.skipped);
  ASSERT_FALSE(chunk.lines.empty());
  EXPECT_EQ(chunk.lines.back(), "line 19999");
  EXPECT_EQ(chunk.lines.front().rfind("line ", 0), 0u);  // the cut fragment was dropped
  EXPECT_EQ(cursor.offset, body.size());
}

// A log of `bytes` bytes and no line end, read with max_line = 100: one line of 100 bytes,
// and the whole file consumed.
void expect_one_line_of_100(size_t bytes) {
  TempDir dir;
  std::string path = dir / "log";
  write_file(path, std::string(bytes, 'x'));
  LogCursor cursor;
  LogTailLimits limits;
  limits.max_line = 100;
  auto chunk = read_appended(path, cursor, limits);
  ASSERT_EQ(chunk.lines.size(), 1u);
  EXPECT_EQ(chunk.lines[0].size(), 100u);
  EXPECT_EQ(cursor.offset, bytes);
}

TEST(LogTail, OverlongLineIsCutNotBufferedForever) {
  expect_one_line_of_100(5000);
}

// The defect: a partial line of exactly max_line bytes was cut by looking at the byte after
// it, one past the end of the read (a heap overflow under ASan).
TEST(LogTail, APartialLineOfExactlyMaxLineIsReadInBounds) {
  expect_one_line_of_100(100);
}

// A big read is taken a piece at a time: a "\r\n" split between two pieces is still one line
// end, and lines that cross a piece are whole.
TEST(LogTail, LinesAcrossReadPiecesAreWhole) {
  TempDir dir;
  std::string path = dir / "log";
  std::string first((1 << 20) - 1, 'a');  // its "\r" is the piece's last byte
  std::string text = first + "\r\n" + std::string(3 << 19, 'b') + "\nstep 7\r";
  write_file(path, text);
  LogCursor cursor;
  LogTailLimits limits;
  limits.max_line = 4 << 20;
  auto chunk = read_appended(path, cursor, limits);
  ASSERT_EQ(chunk.lines.size(), 3u);
  EXPECT_EQ(chunk.lines[0], first);
  EXPECT_EQ(chunk.lines[1], std::string(3 << 19, 'b'));
  EXPECT_EQ(chunk.lines[2], "step 7");
  EXPECT_EQ(cursor.offset, text.size());
  // Read again, with the lines storage of the first read handed on: nothing stale remains.
  chunk = {};
  write_file(path, "step 8\n", true);
  EXPECT_EQ(lines_of(read_appended(path, cursor, limits)), std::vector<std::string>{"step 8"});
}

TEST(LogTail, MissingFileIsAnErrorWithThePath) {
  LogCursor cursor;
  auto chunk = read_appended("/nonexistent/llmwatch.log", cursor);
  EXPECT_NE(chunk.error.find("/nonexistent/llmwatch.log"), std::string::npos);
}

// A FIFO as a log must not block the probe (opening it for reading waits for a writer).
TEST(LogTail, FifoIsAnErrorNotAHang) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "log").c_str(), 0644), 0);
  LogCursor cursor;
  auto chunk = read_appended(dir / "log", cursor);
  EXPECT_NE(chunk.error.find("not a regular file"), std::string::npos) << chunk.error;
}

// A 2 GB log that is one single line: bounded memory (one read of max_bytes_per_read), the
// fragment of the giant line dropped, and the lines that follow are read.
TEST(LogTail, TwoGigabyteSingleLineIsReadInBoundedPieces) {
  testing::TempDir dir;
  { std::ofstream out(dir / "log"); }
  std::filesystem::resize_file(dir / "log", 2ull << 30);  // sparse: no disk used
  LogCursor cursor;
  auto chunk = read_appended(dir / "log", cursor);
  EXPECT_TRUE(chunk.skipped);
  EXPECT_LE(chunk.bytes_read, LogTailLimits{}.max_bytes_per_read);
  EXPECT_TRUE(chunk.lines.empty());  // mid-line: the fragment is dropped
  EXPECT_EQ(cursor.offset, 2ull << 30);
  testing::write_file(dir / "log", "\nglobal_step: 7\n", true);
  chunk = read_appended(dir / "log", cursor);
  EXPECT_EQ(lines_of(chunk), (std::vector<std::string>{"", "global_step: 7"}));
}

// tqdm and Lightning redraw their bar with '\r' only: each redraw is a line, or a run whose
// step advances looks hung (the defect: such a log yielded no line at all).
TEST(LogTail, CarriageReturnEndsALineLikeTqdmWritesIt) {
  TempDir dir;
  std::string path = dir / "log";
  std::string bars =
      testing::read_file(testing::fixture("training-logs/nemo1-progress-bar-cr.log"));
  ASSERT_EQ(bars.find('\n'), std::string::npos);  // the fixture is the real form: no newline
  write_file(path, bars);
  LogCursor cursor;
  auto chunk = read_appended(path, cursor);
  std::vector<std::string> complete;
  for (const auto& l : chunk.lines)
    if (!l.empty()) complete.emplace_back(l);
  ASSERT_EQ(complete.size(), 2u);  // the third redraw is still being drawn
  EXPECT_NE(complete[0].find("global_step=97"), std::string::npos);
  EXPECT_NE(complete[1].find("global_step=98"), std::string::npos);
  write_file(path, "\r", true);
  chunk = read_appended(path, cursor);
  ASSERT_EQ(chunk.lines.size(), 1u);
  EXPECT_NE(chunk.lines[0].find("global_step=99"), std::string::npos);
}

TEST(LogTail, CrLfIsOneLineEnd) {
  TempDir dir;
  write_file(dir / "log", "a\r\nb\r\n");
  LogCursor cursor;
  EXPECT_EQ(lines_of(read_appended(dir / "log", cursor)), (std::vector<std::string>{"a", "b"}));
}

// Every line leaves the probe as valid UTF-8, whatever the bytes in the file.
TEST(LogTail, LinesAreValidUtf8) {
  TempDir dir;
  write_file(dir / "log", "ok \xE2\x96\n\xFF\xFEstep 3\n");
  LogCursor cursor;
  auto chunk = read_appended(dir / "log", cursor);
  ASSERT_EQ(chunk.lines.size(), 2u);
  for (const auto& l : chunk.lines) EXPECT_TRUE(is_valid_utf8(l)) << l;
}

// The defect: invalid bytes were repaired before the lines were counted, so the cursor moved
// by the repaired length (U+FFFD is 3 bytes for 1) and the next read began past the start of
// the next line ("obal_step: 2").
TEST(LogTail, ARepairedLineDoesNotMoveTheCursorPastTheFile) {
  TempDir dir;
  write_file(dir / "log",
             "a\xFF"
             "b\nstep 1\n");
  LogCursor cursor;
  auto first = read_appended(dir / "log", cursor);
  ASSERT_EQ(first.lines.size(), 2u);
  EXPECT_EQ(first.lines[0],
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(cursor.offset, 11u);  // the file's bytes
  write_file(dir / "log", "global_step: 2\n", true);
  auto second = read_appended(dir / "log", cursor);
  EXPECT_EQ(lines_of(second), std::vector<std::string>{"global_step: 2"});
}

}  // namespace
// Lines are views into one buffer per read: they stay valid when the chunk moves, also for a
// read small enough to fit a string's inline buffer (checked under ASan in the second pass).
TEST(LogTail, LineViewsSurviveMovingTheChunk) {
  testing::TempDir dir;
  write_file(dir / "log", "ab\nc\n");
  LogCursor cursor;
  LogChunk moved;
  {
    LogChunk chunk = read_appended(dir / "log", cursor);
    moved = std::move(chunk);
  }
  EXPECT_EQ(lines_of(moved), (std::vector<std::string>{"ab", "c"}));
  LogChunk copy = moved;
  moved = LogChunk{};
  EXPECT_EQ(lines_of(copy), (std::vector<std::string>{"ab", "c"}));
}

// A line cut at max_line is cut between characters, never inside one.
TEST(LogTail, AnOverlongLineIsCutBetweenCharacters) {
  testing::TempDir dir;
  std::string line;
  for (int i = 0; i < 100; ++i) line += "\xC3\xA9";  // é, two bytes each
  write_file(dir / "log", line + "\n");
  LogCursor cursor;
  auto chunk = read_appended(dir / "log", cursor, LogTailLimits{1 << 20, 51});
  ASSERT_EQ(chunk.lines.size(), 1u);
  EXPECT_EQ(chunk.lines[0].size(), 50u);
  EXPECT_TRUE(is_valid_utf8(chunk.lines[0]));
}

}  // namespace llmwatch

namespace llmwatch {
namespace {

// The offsets handed on with the lines (#30: they clock a step by the log's growth): one per
// line, rising, each just past its own line end in the file (so the text up to it ends in a
// '\n' or '\r'), the last one the cursor's. Random logs of '\n', "\r\n", lone '\r', blank,
// overlong and invalid UTF-8 lines, read in random appends.
TEST(LogTail, EachLinesEndOffsetIsWhereItsBytesEnd) {
  std::mt19937 rng(30);
  for (int round = 0; round < 200; ++round) {
    TempDir dir;
    std::string path = dir / "log";
    write_file(path, "");
    LogCursor cursor;
    LogTailLimits limits;
    limits.max_line = 64;
    std::string text;
    for (int append = 0; append < 4; ++append) {
      std::string piece;
      for (int i = rng() % 20; i > 0; --i) {
        piece +=
            std::string(rng() % 3 == 0 ? rng() % 100 : rng() % 10, "ab\xe2\x96\x88x"[rng() % 5]);
        piece += std::vector<std::string>{"\n", "\r\n", "\r"}[rng() % 3];
      }
      if (rng() % 3 == 0) piece += "partial";
      write_file(path, piece, true);
      text += piece;
      std::vector<std::uint64_t> ends;
      std::vector<bool> cut;  // handed on cut at max_line: its offset is what was read of it
      size_t lines = 0;
      const std::uint64_t from = cursor.offset;
      scan_appended(path, cursor, limits,
                    [&](std::span<const std::string_view> got, std::span<const std::uint64_t> at) {
                      ASSERT_EQ(got.size(), at.size());
                      lines += got.size();
                      ends.insert(ends.end(), at.begin(), at.end());
                      for (const auto& line : got)
                        cut.push_back(line.size() + 3 >= limits.max_line);
                    });
      ASSERT_EQ(ends.size(), lines);
      std::uint64_t before = from;
      for (size_t i = 0; i < ends.size(); ++i) {
        EXPECT_GT(ends[i], before);
        EXPECT_LE(ends[i], text.size());
        char last = text[ends[i] - 1];
        EXPECT_TRUE(cut[i] || last == '\n' || last == '\r') << "round " << round;
        before = ends[i];
      }
      if (!ends.empty() && !cut.back()) {
        EXPECT_EQ(ends.back(), cursor.offset) << "round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace llmwatch
