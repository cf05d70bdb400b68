// The per-rank timing files the Python helper writes (#28), read as a hostile world writes them:
// half a line, a line that is not JSON, negative or missing figures, a huge file.
#include "probes/rank_timing.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"
#include "util/subprocess.h"

namespace llmwatch {
namespace {

using testing::TempDir;
using testing::write_file;

TEST(RankTiming, RecordsAreReadAndBadLinesSkippedAndCounted) {
  int bad = 0;
  auto s = parse_rank_timing(
      "{\"v\":1,\"ts\":1800000000.5,\"rank\":12,\"host\":\"node-3\",\"step\":100,"
      "\"compute_s\":0.41,\"wait_s\":0.02}\n"
      "not json\r\n"
      "{\"rank\":12,\"step\":101,\"compute_s\":-1}\n"
      "{\"rank\":12,\"step\":102}\n"
      "{\"rank\":12,\"host\":\"node-3\",\"step\":103,\"compute_s\":0.40}\n"
      "{\"rank\":12,\"host\":\"node-3\",\"step\":104,\"comp",
      &bad);
  EXPECT_EQ(bad, 3);
  EXPECT_EQ(s.rank, 12);
  EXPECT_EQ(s.host, "node-3");
  ASSERT_EQ(s.samples.size(), 2u) << "the line still being written waits";
  EXPECT_EQ(s.samples[0].step, 100);
  EXPECT_DOUBLE_EQ(s.samples[0].compute_s, 0.41);
  EXPECT_DOUBLE_EQ(s.samples[0].wait_s, 0.02);
  EXPECT_DOUBLE_EQ(s.samples[1].wait_s, 0) << "no wait figure: none measured";
}

TEST(RankTiming, ADirectoryIsReadByItsRankFilesTailsOnly) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 5000; ++i)
    big +=
        "{\"rank\":0,\"host\":\"node-1\",\"step\":" + std::to_string(i) + ",\"compute_s\":0.4}\n";
  write_file(dir / "rank-0.jsonl", big);
  write_file(dir / "rank-1.jsonl",
             "{\"rank\":7,\"host\":\"node-2\",\"step\":1,\"compute_s\":0.5}\n");
  write_file(dir / "notes.txt", "{\"rank\":9,\"host\":\"x\",\"step\":1,\"compute_s\":0.5}\n");
  write_file(dir / "rank-x.jsonl", "{\"rank\":9,\"host\":\"x\",\"step\":1,\"compute_s\":0.5}\n");
  auto r = read_rank_timing(dir.path, 4096);
  EXPECT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[0].rank, 0);
  EXPECT_LT(r.ranks[0].samples.size(), 200u) << "only the tail is read";
  EXPECT_EQ(r.ranks[0].samples.back().step, 4999);
  EXPECT_EQ(r.ranks[1].rank, 1) << "the file's name says the rank";
  EXPECT_EQ(r.bad_lines, 0) << "the cut first line of a tail is dropped, not counted";
}

TEST(RankTiming, AMissingDirectoryIsAnErrorWithItsReason) {
  auto r = read_rank_timing("/nonexistent/llmwatch-timing");
  EXPECT_NE(r.error.find("No such file or directory"), std::string::npos) << r.error;
  EXPECT_TRUE(r.ranks.empty());
}

// The shipped Python helper and the probe agree: what llmwatch_timing.py writes is what
// read_rank_timing reads, a section at a time, with no torch and nothing but the stdlib.
TEST(RankTiming, ThePythonHelpersFilesAreWhatTheProbeReads) {
  TempDir dir;
  ProcessSpec py;
  py.argv = {"python3",
             "-I",
             "-c",
             "import sys, time\n"
             "sys.path.insert(0, sys.argv[1])\n"
             "from llmwatch_timing import RankTimer\n"
             "assert 'torch' not in sys.modules\n"
             "calls = []\n"
             "t = RankTimer(directory=sys.argv[2], rank=3, host='node-2', sync=lambda: "
             "calls.append(1))\n"
             "for step in range(5):\n"
             "    with t.compute(): time.sleep(0.002)\n"
             "    with t.wait(): pass\n"
             "    t.step(step)\n"
             "assert len(calls) == 10\n"
             "assert not RankTimer(directory='').enabled\n",
             std::string(LLMWATCH_TEST_HELPERS) + "/../../share/llmwatch/python",
             dir.path};
  py.timeout = std::chrono::seconds(30);
  auto r = run_process(py);
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  auto read = read_rank_timing(dir.path);
  ASSERT_EQ(read.ranks.size(), 1u) << read.error;
  EXPECT_EQ(read.bad_lines, 0);
  EXPECT_EQ(read.ranks[0].rank, 3);
  EXPECT_EQ(read.ranks[0].host, "node-2");
  ASSERT_EQ(read.ranks[0].samples.size(), 5u);
  EXPECT_EQ(read.ranks[0].samples[4].step, 4);
  EXPECT_GE(read.ranks[0].samples[4].compute_s, 0.002);
  EXPECT_GT(read.ranks[0].samples[4].ts, 1.7e9);
}

}  // namespace
}  // namespace llmwatch
