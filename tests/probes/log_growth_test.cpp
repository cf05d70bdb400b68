#include "probes/log_growth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "probes/log_tail.h"
#include "test_util.h"

namespace llmwatch {
namespace {

using testing::set_mtime;
using testing::TempDir;
using testing::write_file;

// The first sample that held a byte bounds its write; none did, or another file: no bound.
TEST(LogGrowth, TheFirstSampleThatHeldTheBytesBoundsTheirWrite) {
  GrowthSeries s{1, 7, {{100, 10.0}, {160, 20.0}, {400, 35.0}}};
  EXPECT_EQ(written_by(s, 1, 7, 100), 10.0);
  EXPECT_EQ(written_by(s, 1, 7, 101), 20.0);
  EXPECT_EQ(written_by(s, 1, 7, 400), 35.0);
  EXPECT_EQ(written_by(s, 1, 7, 401), 0.0);  // written after the last sample
  EXPECT_EQ(written_by(s, 1, 8, 100), 0.0);  // a replaced file
  EXPECT_EQ(written_by(s, 1, 7, 0), 0.0);
}

// Only followed paths are sampled; a file that did not grow adds nothing; a truncated or
// replaced one starts over; the samples are bounded.
TEST(LogGrowth, KeepsGrowthOfFollowedFilesOnly) {
  LogGrowth g;
  g.follow({"/a", "/b"});
  g.observe("/a", 1, 7, 10, 1.0);
  g.observe("/a", 1, 7, 10, 2.0);
  g.observe("/a", 1, 7, 20, 3.0);
  g.observe("/c", 1, 9, 10, 1.0);
  EXPECT_EQ(g.series("/a").samples.size(), 2u);
  EXPECT_TRUE(g.series("/c").samples.empty());
  g.observe("/a", 1, 7, 5, 4.0);  // truncated
  ASSERT_EQ(g.series("/a").samples.size(), 1u);
  EXPECT_EQ(g.series("/a").samples.front().mtime, 4.0);
  g.observe("/a", 1, 8, 50, 5.0);  // replaced
  EXPECT_EQ(g.series("/a").inode, 8u);
  ASSERT_EQ(g.series("/a").samples.size(), 1u);
  for (std::uint64_t i = 0; i < 2 * LogGrowth::kMaxSamples; ++i) g.observe("/b", 1, 3, i + 1, i);
  EXPECT_EQ(g.series("/b").samples.size(), LogGrowth::kMaxSamples);
  g.follow({"/b"});
  EXPECT_TRUE(g.series("/a").samples.empty()) << "no longer followed: dropped";
  // At most kMaxPaths are followed, whatever a cycle asks.
  std::vector<std::string> many;
  for (std::size_t i = 0; i <= LogGrowth::kMaxPaths; ++i)
    many.push_back("/p/" + std::to_string(100000 + i));
  g.follow(many);
  g.observe(many.front(), 1, 1, 1, 1.0);
  g.observe(many.back(), 1, 2, 1, 1.0);
  EXPECT_EQ(g.series(many.front()).samples.size(), 1u);
  EXPECT_TRUE(g.series(many.back()).samples.empty());
}

// On a real file: a step line sampled before the hung rank's heartbeats came is clocked at
// its own write, though the read that holds it sees the heartbeats' mtime; the offsets
// scan_appended hands on are where each line's bytes end.
TEST(LogGrowth, AStepFollowedByHeartbeatsIsBoundedByTheSampleThatHeldIt) {
  TempDir dir;
  std::string path = dir / "log";
  write_file(path, "global_step: 1\r\n");
  set_mtime(path, 1000);
  LogGrowth g;
  g.follow({path});
  g.sample(std::chrono::seconds(2));
  write_file(path, "heartbeat\nheartbeat\n", true);
  set_mtime(path, 1020);
  g.sample(std::chrono::seconds(2));
  LogCursor cursor;
  std::vector<std::uint64_t> ends;
  auto chunk = scan_appended(
      path, cursor, {},
      [&](std::span<const std::string_view> lines, std::span<const std::uint64_t> at) {
        EXPECT_EQ(lines.size(), at.size());
        ends.insert(ends.end(), at.begin(), at.end());
      });
  EXPECT_EQ(chunk.mtime, 1020);
  ASSERT_EQ(ends, (std::vector<std::uint64_t>{16, 26, 36}));
  EXPECT_EQ(written_by(g.series(path), cursor.dev, cursor.inode, ends[0]), 1000);
  EXPECT_EQ(written_by(g.series(path), cursor.dev, cursor.inode, ends[1]), 1020);
}

// Between two ticks, the bytes a followed log grew by are read for a crash signature (#30):
// the daemon then brings its next cycle forward. What was there at the first look is not news,
// a line not yet ended is not read, and a signature is told once.
TEST(LogGrowth, ACrashPrintedSinceTheLastLookIsToldOnce) {
  TempDir dir;
  const std::string path = dir / "train.log";
  write_file(path, "Traceback (most recent call last):\nglobal_step: 1\n");
  LogGrowth g;
  g.follow({path});
  g.sample(std::chrono::seconds(2));
  EXPECT_FALSE(g.take_end_seen()) << "already in the file at the first look";
  write_file(path, "global_step: 2\nglobal_step: 3\n", true);
  g.sample(std::chrono::seconds(2));
  EXPECT_FALSE(g.take_end_seen());
  write_file(path, "[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp", true);
  g.sample(std::chrono::seconds(2));
  EXPECT_FALSE(g.take_end_seen()) << "a line not yet ended";
  write_file(path, ", unhandled system error\n", true);
  g.sample(std::chrono::seconds(2));
  EXPECT_EQ(g.take_end_seen().value_or(""), path);
  EXPECT_FALSE(g.take_end_seen()) << "told once";
  write_file(path, "global_step: 4\n", true);
  g.sample(std::chrono::seconds(2));
  EXPECT_FALSE(g.take_end_seen());
}

// The crash printed after the cycle's read but before the sampler's first look at the file
// (the bench's 28.7 s run: the restart waited for the next tick): news, since the read said
// where it stopped.
TEST(LogGrowth, ACrashPrintedAfterTheCyclesReadIsNewsAtTheFirstLook) {
  TempDir dir;
  const std::string path = dir / "train.log";
  write_file(path, "global_step: 1\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  LogGrowth g;
  g.follow({path});
  g.read_upto(path, static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
              static_cast<std::uint64_t>(st.st_size));
  write_file(path, "Traceback (most recent call last):\n", true);
  g.sample(std::chrono::seconds(2));
  EXPECT_EQ(g.take_end_seen().value_or(""), path);
}

}  // namespace
}  // namespace llmwatch
