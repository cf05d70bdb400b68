// The per-rank timing files the Python helper writes (#28), read as a hostile world writes them:
// half a line, a line that is not JSON, negative or missing figures, a huge file.
#include "probes/rank_timing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <future>
#include <memory>
#include <random>
#include <thread>

#include "rank_timing_sim.h"
#include "rules/straggler.h"
#include "test_util.h"
#include "util/robust_stats.h"
#include "util/subprocess.h"

namespace llmwatch {
namespace {

using testing::TempDir;
using testing::write_file;

// Edits of `good`, a summary: each replaces the first `from` in it with `to`.
auto edits_of(std::string good) {
  return [good = std::move(good)](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
}

// Each (text, why): the summary is an error whose reason holds `why`, and nothing of it is read.
void expect_each_is_an_error(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [text, why] : cases) {
    auto s = parse_timing_summary(text);
    EXPECT_NE(s.error.find(why), std::string::npos) << text << " -> " << s.error;
    EXPECT_TRUE(s.windows.empty()) << text;
  }
}

// Runs `script` (python3 -I -c) with the shipped helper's directory as sys.argv[1] and `args`
// after it: the helper as a trainer uses it, with nothing but the standard library.
::testing::AssertionResult run_helper_script(const std::string& script,
                                             const std::vector<std::string>& args,
                                             int timeout_s = 30) {
  ProcessSpec py;
  py.argv = {"python3", "-I", "-c", script,
             std::string(LLMWATCH_TEST_HELPERS) + "/../../share/llmwatch/python"};
  py.argv.insert(py.argv.end(), args.begin(), args.end());
  py.timeout = std::chrono::seconds(timeout_s);
  auto r = run_process(py);
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.out << r.err;
}

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
// read_rank_timing reads, a section at a time, with no torch and nothing but the stdlib. In
// summary mode without torch.distributed (here: no torch at all) a process gathers only itself
// and training goes on.
TEST(RankTiming, ThePythonHelpersFilesAreWhatTheProbeReads) {
  TempDir dir;
  ASSERT_TRUE(run_helper_script(
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
      "assert not RankTimer(directory='').enabled\n"
      "def boom(row): raise AssertionError('a disabled timer gathers nothing')\n"
      "off = RankTimer(directory='', summary=True, gather=boom)\n"
      "for step in range(45): off.add('compute', 0.1); off.step(step)\n"
      "import os\n"
      "alone = RankTimer(directory=os.path.join(sys.argv[2], 'alone'), rank=0, "
      "host='node-1', summary=True)\n"
      "for step in range(25): alone.add('compute', 0.1); alone.step(step)\n"
      "assert os.path.exists(os.path.join(sys.argv[2], 'alone', 'summary.json'))\n",
      {dir.path}));
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

// Events mode (events=torch.cuda.Event; here a stand-in with a clock): each section is timed by
// its events on the GPU and nothing waits for the device; a step is written at the next one,
// once its events are done. And a timer that is off costs nothing: the defect was that it still
// synchronised the GPU twice a step (its docstring said "does nothing and costs nothing").
TEST(RankTiming, ThePythonHelpersEventsModeNeverSynchronisesAndAnOffTimerCostsNothing) {
  TempDir dir;
  ASSERT_TRUE(run_helper_script(R"(import sys
sys.path.insert(0, sys.argv[1])
from llmwatch_timing import RankTimer
clock, syncs = [1.0], []
class Event:
    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t, self.done = None, False
    def record(self):
        self.t = clock[0]
    def synchronize(self):
        self.done = True
    def elapsed_time(self, end):
        assert end.done, "read before its end event was waited for"
        return (end.t - self.t) * 1000.0
t = RankTimer(directory=sys.argv[2], rank=1, host="node-1", events=Event,
              sync=lambda: syncs.append(1))
for step in range(5):
    for micro in range(2):  # two micro-batches: a step's sections add up
        with t.compute():
            clock[0] += 0.05 * (step + 1)
    with t.wait():
        clock[0] += 0.01
    t.step(step)
assert not syncs, "events mode synchronised the device"
off = RankTimer(directory="", sync=lambda: syncs.append(1), events=Event)
off_sync = RankTimer(directory="", sync=lambda: syncs.append(1))
for timer in (off, off_sync):
    for step in range(3):
        with timer.compute():
            pass
        with timer.wait():
            pass
        timer.step(step)
assert not syncs, "a timer that is off synchronised the device"
)",
                                {dir.path}));
  auto read = read_rank_timing(dir.path);
  ASSERT_EQ(read.ranks.size(), 1u) << read.error;
  const auto& samples = read.ranks[0].samples;
  ASSERT_EQ(samples.size(), 4u) << "the last step waits for the next";
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].step, static_cast<std::int64_t>(i));
    EXPECT_NEAR(samples[i].compute_s, 0.1 * (i + 1), 1e-6);
    EXPECT_NEAR(samples[i].wait_s, 0.01, 1e-6);
  }
}

// A FIFO where a rank file or the summary should be: opening it for reading would wait for a
// writer, forever. It is an error with its reason, at once. (Before, the read hung: the test
// then opens the FIFO for writing to let it go, and fails.)
TEST(RankTiming, AFifoIsAnErrorNotAHang) {
  for (std::string name : {"rank-0.jsonl", "summary.json"}) {
    TempDir dir;
    const std::string fifo = dir / name;
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    auto done = std::make_shared<std::promise<RankTimingRead>>();
    auto answer = done->get_future();
    std::thread([done, path = dir.path] { done->set_value(read_rank_timing(path)); }).detach();
    if (answer.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // lets the blocked open go
      answer.wait();
      ::close(w);
      ADD_FAILURE() << name << ": the read waited for a writer";
      continue;
    }
    auto r = answer.get();
    EXPECT_TRUE(r.ranks.empty() && !r.windows) << name;
    if (name == "summary.json")
      EXPECT_NE(r.error.find("not a regular file"), std::string::npos) << r.error;
    else
      EXPECT_EQ(r.bad_lines, 1) << "the rank file is skipped and counted";
  }
}

// A large job's rank 0 writes every rank's window to one file (the helper's summary mode).
TEST(RankTiming, ASummaryIsReadAsEveryRanksWindow) {
  auto s = parse_timing_summary(testing::read_file(testing::fixture("rank-timing/summary.json")));
  ASSERT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.step, 39);
  EXPECT_GT(s.ts, 1.7e9);
  ASSERT_EQ(s.windows.size(), 8u);
  for (const auto& w : s.windows) {
    EXPECT_EQ(s.windows.host_of(w), w.rank < 4 ? "node-1" : "node-2") << w.rank;
    EXPECT_LE(w.best, w.now);
    EXPECT_GT(w.now, 0.3);
  }
  auto v = judge_nodes(s.windows);
  ASSERT_TRUE(v.suspect());
  EXPECT_EQ(v.suspect()->node, "node-2") << "its ranks compute 1.3x from step 20";
  EXPECT_LT(v.suspect()->individual, 0.9) << "it turned slow: its own best was faster";
  // As the helper wrote it before: a row a node.
  auto rows =
      parse_timing_summary(testing::read_file(testing::fixture("rank-timing/summary-v2.json")));
  ASSERT_TRUE(rows.error.empty()) << rows.error;
  ASSERT_EQ(rows.windows.nodes.size(), 2u);
  auto by_rows = judge_nodes(rows.windows);
  ASSERT_TRUE(by_rows.suspect());
  EXPECT_EQ(by_rows.suspect()->node, "node-2");
  EXPECT_EQ(rank_ranges(by_rows.suspect()->ranks), "4-7");
  EXPECT_LT(by_rows.suspect()->individual, 0.9);
  // As it writes it now: 12 nodes, rows for the 8 slowest; node-5's ranks compute 1.3x from
  // step 20.
  auto slowest =
      parse_timing_summary(testing::read_file(testing::fixture("rank-timing/summary-v3.json")));
  ASSERT_TRUE(slowest.error.empty()) << slowest.error;
  EXPECT_EQ(slowest.windows.hosts.size(), 12u);
  ASSERT_EQ(slowest.windows.nodes.size(), 8u);
  auto by_slowest = judge_nodes(slowest.windows);
  EXPECT_EQ(by_slowest.judged(), 12u);
  ASSERT_TRUE(by_slowest.suspect());
  EXPECT_EQ(by_slowest.suspect()->node, "node-5");
  EXPECT_EQ(rank_ranges(by_slowest.suspect()->ranks), "8-9");
  EXPECT_LT(by_slowest.suspect()->relative, 0.8);
  EXPECT_LT(by_slowest.suspect()->individual, 0.8);
  for (std::size_t i = 1; i < by_slowest.nodes.size(); ++i)
    EXPECT_FALSE(by_slowest.nodes[i].suspect) << by_slowest.nodes[i].node;
}

TEST(RankTiming, ASummaryThatIsNotWholeIsAnErrorWithItsReason) {
  const std::string good =
      R"({"v":1,"ts":1800000000,"step":5,"window_s":9,"hosts":["node-1","node-2"],)"
      R"("host":[0,1],"rank":[0,1],"now":[0.4,0.5],"best":[0.4,0.4]})";
  ASSERT_TRUE(parse_timing_summary(good).error.empty()) << parse_timing_summary(good).error;
  // Blanks around an item, and an exponent, are still numbers.
  auto spaced = parse_timing_summary(good.substr(0, good.find("\"now\"")) +
                                     "\"now\":[ 0.4 ,\n5e-1\t],\"best\":[0.4,0.4]}");
  ASSERT_TRUE(spaced.error.empty()) << spaced.error;
  EXPECT_EQ(spaced.windows[1].now, 0.5);
  const auto with = edits_of(good);
  expect_each_is_an_error({
      {good.substr(0, good.size() - 20), "not a JSON object"},
      {with("\"v\":1", "\"v\":4"), "version"},
      {with("\"ts\":1800000000", "\"ts\":-1"), "\"ts\""},
      {with("[0.4,0.5]", "[0.4,-0.5]"), "\"now\""},
      {with("[0.4,0.5]", "[0.4,nan]"), "\"now\""},
      {with("[0.4,0.5]", "[0.4 x,0.5]"), "\"now\""},
      {with("[0.4,0.5]", "[0.4,,0.5]"), "\"now\""},
      {with("[0.4,0.5]", "[0.4,0.5,]"), "\"now\""},
      {with("[0.4,0.5]", "[0.4,0.5.1]"), "\"now\""},
      {with("[0.4,0.5]", "[0.4]"), "one length"},
      {with("\"host\":[0,1]", "\"host\":[0,2]"), "names no host"},
      {with("\"rank\":[0,1]", "\"rank\":[1,1]"), "twice"},
      {with("\"rank\":[0,1]", "\"rank\":[0,1.5]"), "not a rank"},
      {with("\"node-2\"", "\"node\\\"-2\""), "\"hosts\""},
      {with("\"best\":", "\"worst\":"), "\"best\""},
  });
}

// What the helper writes ("v":2, a row a node; "v":3, now, a row for each of the 8 slowest), with
// the figures the rule judges a node by worked out by rank 0. Over healthy noise and slow nodes,
// layouts of 2 to 24 nodes and 1 to 8 ranks a node, the rows are judged exactly as every rank's
// window is: the same nodes in the same order, the same scores, the same suspect; and in "v":3
// the nodes without a row are judged, each as fast as the rows' or faster, none a suspect.
TEST(RankTiming, ANodeRowSummaryIsJudgedExactlyAsEveryRanksWindow) {
  std::mt19937 rng(28);
  std::uniform_int_distribution<int> nodes(2, 24), per_node(1, 8), pick(0, 3);
  int suspects = 0;
  for (int job = 0; job < 600; ++job) {
    const bool slowest_only = job % 2;
    testing::TimingSim sim;
    sim.nodes = nodes(rng);
    sim.ranks_per_node = per_node(rng);
    if (pick(rng) > 0) {
      sim.slow_node = "node-" + std::to_string(1 + job % sim.nodes);
      sim.slow_speed = 0.5 + 0.1 * pick(rng);
      sim.slow_from_step = 10 * pick(rng);
    }
    RankWindows windows = rank_windows(sim.run(rng));
    auto by_ranks = judge_nodes(windows);
    auto rows =
        parse_timing_summary(testing::summary_json_v2(windows, 1.8e9, 42, 59, -1, 8, slowest_only));
    ASSERT_TRUE(rows.error.empty()) << rows.error;
    const std::size_t given =
        slowest_only ? std::min<std::size_t>(8, windows.hosts.size()) : windows.hosts.size();
    ASSERT_EQ(rows.windows.nodes.size(), given);
    EXPECT_EQ(rows.windows.window_s, 42);
    auto by_rows = judge_nodes(rows.windows);
    ASSERT_EQ(by_rows.nodes.size(), std::min(given, by_ranks.nodes.size())) << job;
    EXPECT_EQ(by_rows.judged(), by_ranks.judged()) << job;
    EXPECT_EQ(by_rows.not_judged, by_ranks.not_judged);
    for (std::size_t i = by_rows.nodes.size(); i < by_ranks.nodes.size(); ++i)
      EXPECT_FALSE(by_ranks.nodes[i].suspect) << job << " " << by_ranks.nodes[i].node;
    for (std::size_t i = 0; i < by_rows.nodes.size(); ++i) {
      const NodeSpeed &a = by_ranks.nodes[i], &b = by_rows.nodes[i];
      ASSERT_EQ(a.node, b.node) << job << " at " << i;
      EXPECT_EQ(a.relative, b.relative) << job << " " << a.node;
      EXPECT_EQ(a.individual, b.individual) << job << " " << a.node;
      EXPECT_EQ(a.compute_ratio, b.compute_ratio) << job << " " << a.node;
      EXPECT_EQ(a.ranks, b.ranks) << job << " " << a.node;
      // Rank 0 gives the peers' spread of the 8 slowest: a suspect is the slowest node.
      EXPECT_EQ(i < 8 && a.suspect, b.suspect) << job << " " << a.node;
    }
    suspects += by_rows.suspect() != nullptr;
  }
  EXPECT_GT(suspects, 300) << "the slow nodes were found, not only agreed on";
}

// #28: a rewritten summary whose "hosts" and "ranks" arrays are the text they were takes the
// job's nodes and ranks from the summary read before (their reading was a third of a rewritten
// 512-rank summary's). Over random jobs, rewrites with the same layout and with another one (a
// node more or fewer, another node's name, ranks placed otherwise) read exactly as they read
// alone; a rewrite whose figures are not whole is the same error with its reason either way. Each
// of either form ("v":2, a row a node; "v":3, rows for the slowest), the one before of either.
TEST(RankTiming, ARewriteOfTheSameLayoutReadsAsItReadsAlone) {
  std::mt19937 rng(2812);
  std::uniform_int_distribution<int> nodes(2, 24), per_node(1, 8), pick(0, 3);
  auto same = [](const RankWindows& a, const RankWindows& b) {
    if (a.hosts != b.hosts || a.node_ranks != b.node_ranks || a.host_ranks != b.host_ranks ||
        a.slowest_only != b.slowest_only || a.nodes.size() != b.nodes.size() ||
        a.window_s != b.window_s || !(a.layout == b.layout))
      return false;
    for (std::size_t i = 0; i < a.nodes.size(); ++i) {
      const NodeWindow &x = a.nodes[i], &y = b.nodes[i];
      if (x.host != y.host || x.slowest != y.slowest || x.now != y.now || x.best != y.best ||
          x.peers != y.peers || x.spread != y.spread || x.ranks_from != y.ranks_from ||
          x.ranks_to != y.ranks_to)
        return false;
    }
    return true;
  };
  int reused = 0;
  for (int job = 0; job < 600; ++job) {
    testing::TimingSim sim;
    sim.nodes = nodes(rng);
    sim.ranks_per_node = per_node(rng);
    const bool was_slowest_only = job % 2, slowest_only = job % 4 < 2;
    auto before = parse_timing_summary(
        testing::summary_json_v2(rank_windows(sim.run(rng)), 1e9, 30, 59, -1, 8, was_slowest_only));
    ASSERT_TRUE(before.error.empty()) << before.error;
    const int change = pick(rng);  // 0, 1: the same layout; 2: other nodes; 3: other ranks
    if (change == 2) sim.nodes += sim.nodes > 2 && pick(rng) < 2 ? -1 : 1;
    if (change == 3) sim.ranks_per_node = sim.ranks_per_node % 8 + 1;
    std::string text =
        testing::summary_json_v2(rank_windows(sim.run(rng)), 1e9 + 30, 60, 69, -1, 8, slowest_only);
    if (change >= 2 && pick(rng) == 0) text.replace(text.find("\"node-1\""), 8, "\"node-01\"");
    auto alone = parse_timing_summary(text);
    auto after = parse_timing_summary(text, &before.windows);
    ASSERT_TRUE(alone.error.empty()) << alone.error;
    ASSERT_EQ(after.error, "") << job;
    ASSERT_TRUE(same(alone.windows, after.windows)) << job << ": " << text;
    EXPECT_EQ(alone.ts, after.ts);
    EXPECT_EQ(alone.step, after.step);
    reused += before.windows.layout == after.windows.layout;
    // Its figures not whole: an error, whoever's nodes it takes.
    std::string broken = text;
    broken.replace(broken.find("\"now\":[") + 7, 0, "-");
    EXPECT_EQ(parse_timing_summary(broken).error,
              parse_timing_summary(broken, &before.windows).error);
    EXPECT_NE(parse_timing_summary(broken, &before.windows).error, "");
  }
  EXPECT_GT(reused, 200) << "the same layouts were met, and taken from the summary before";
  EXPECT_LT(reused, 500) << "other layouts were met too";
}

TEST(RankTiming, ANodeRowSummaryThatIsNotWholeIsAnErrorWithItsReason) {
  const std::string good =
      R"({"v":2,"ts":1800000000,"step":5,"window_s":9,"hosts":["node-1","node-2"],)"
      R"("ranks":["0-1 4","2-3"],"slowest":[4,2],"now":[0.4,0.5],"best":[0.4,0.4],)"
      R"("peers":[0.5,0.4],"spread_of":[1],"spread":[0.01]})";
  auto ok = parse_timing_summary(good);
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  ASSERT_EQ(ok.windows.nodes.size(), 2u);
  EXPECT_EQ(ok.windows.node_ranks, (std::vector<int>{0, 1, 4, 2, 3}));
  EXPECT_EQ(ok.windows.nodes[0].spread, -1) << "not given";
  EXPECT_EQ(ok.windows.nodes[1].spread, 0.01);
  auto v = judge_nodes(ok.windows);
  ASSERT_TRUE(v.suspect());
  EXPECT_EQ(v.suspect()->node, "node-2");
  EXPECT_EQ(rank_ranges(v.suspect()->ranks), "2-3");
  const auto with = edits_of(good);
  // Slow, but with no spread given for it: not a suspect (unknown is never a reason to act).
  EXPECT_FALSE(
      judge_nodes(parse_timing_summary(with("\"spread_of\":[1]", "\"spread_of\":[0]")).windows)
          .suspect());
  expect_each_is_an_error({
      {with("\"node-2\"]", "\"node-1\"]"), "node is listed twice"},
      {with("\"2-3\"", "\"2-4\""), "rank is listed twice"},
      {with("\"2-3\"", "\"3-2\""), "\"ranks\""},
      {with("\"2-3\"", "\"2-\""), "\"ranks\""},
      {with("\"2-3\"", "\"-2\""), "\"ranks\""},
      {with("\"2-3\"", "\"2,3\""), "\"ranks\""},
      {with("\"2-3\"", "\"\""), "\"ranks\""},
      {with("\"2-3\"", "\"2  3\""), "\"ranks\""},
      {with("\"2-3\"", "\"2-99999999\""), "\"ranks\""},
      {with("\"2-3\"", "\"0-1048576\""), "\"ranks\""},
      {with(",\"2-3\"", ""), "one length"},
      {with("\"slowest\":[4,2]", "\"slowest\":[4,1]"), "not one of its node's ranks"},
      {with("\"slowest\":[4,2]", "\"slowest\":[4,2.5]"), "not one of its node's ranks"},
      {with("[0.5,0.4]", "[0.5]"), "one length"},
      {with("[0.5,0.4]", "[0.5,-0.4]"), "\"peers\""},
      {with("\"spread_of\":[1]", "\"spread_of\":[2]"), "names no node"},
      {with("\"spread_of\":[1]", "\"spread_of\":[1,1]"), "one length"},
      {with("\"spread_of\":[1],\"spread\":[0.01]", "\"spread_of\":[1,1],\"spread\":[1,1]"),
       "given twice"},
      {with("\"spread\":[0.01]", "\"spread\":[-1]"), "\"spread\""},
      {with("\"peers\":", "\"others\":"), "\"peers\""},
  });
}

// "v":3: rows for the slowest few alone. The nodes without a row are judged (as at least as fast),
// and every figure a row has is checked as in "v":2; its "rows" name each node once at most.
TEST(RankTiming, ASlowestRowsSummaryThatIsNotWholeIsAnErrorWithItsReason) {
  const std::string good =
      R"({"v":3,"ts":1800000000,"step":5,"window_s":9,"hosts":["node-1","node-2","node-3"],)"
      R"("ranks":["0-1 4","2-3","5-6"],"rows":[1],"slowest":[2],"now":[0.5],"best":[0.4],)"
      R"("peers":[0.4],"spread":[0.01]})";
  auto ok = parse_timing_summary(good);
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  ASSERT_TRUE(ok.windows.slowest_only);
  ASSERT_EQ(ok.windows.nodes.size(), 1u);
  EXPECT_EQ(ok.windows.nodes[0].host, 1u);
  EXPECT_EQ(ok.windows.nodes[0].spread, 0.01);
  EXPECT_EQ(ok.windows.node_ranks, (std::vector<int>{0, 1, 4, 2, 3, 5, 6}));
  auto v = judge_nodes(ok.windows);
  ASSERT_TRUE(v.suspect());
  EXPECT_EQ(v.suspect()->node, "node-2");
  EXPECT_EQ(rank_ranges(v.suspect()->ranks), "2-3");
  EXPECT_EQ(v.judged(), 3u);
  EXPECT_EQ(v.more, (std::vector<std::string>{"node-1", "node-3"}));
  const auto with = edits_of(good);
  // No row at all: every node judged as fast as the others, none a suspect.
  auto none = parse_timing_summary(
      with(R"("rows":[1],"slowest":[2],"now":[0.5],"best":[0.4],"peers":[0.4],"spread":[0.01])",
           R"("rows":[],"slowest":[],"now":[],"best":[],"peers":[],"spread":[])"));
  ASSERT_TRUE(none.error.empty()) << none.error;
  EXPECT_FALSE(none.windows.empty());
  EXPECT_FALSE(judge_nodes(none.windows).suspect());
  EXPECT_EQ(judge_nodes(none.windows).judged(), 3u);
  EXPECT_EQ(judge_nodes(none.windows).not_judged, "");
  expect_each_is_an_error({
      {with("\"rows\":[1]", "\"rows\":[3]"), "names no node"},
      {with("\"rows\":[1]", "\"rows\":[0.5]"), "names no node"},
      {with("\"rows\":[1]", "\"rows\":[1,1]"), "row is given twice"},
      {with("\"rows\":[1]", "\"rows\":[1,2]"), "one length"},
      {with("\"rows\":[1]", "\"lines\":[1]"), "\"rows\""},
      {with("\"slowest\":[2]", "\"slowest\":[5]"), "not one of its node's ranks"},
      {with("\"spread\":[0.01]", "\"spread\":[0.01,0.02]"), "one length"},
      {with("\"spread\":[0.01]", "\"spread\":[-1]"), "\"spread\""},
      {with(",\"5-6\"", ""), "one length"},
      {with("\"node-3\"]", "\"node-1\"]"), "node is listed twice"},
  });
}

// A node is known by its name, not by where the summary lists it: one listed twice is one node
// (its ranks judged together), and ranks listed out of order are still checked for a repeat.
TEST(RankTiming, ASummarysNodeListedTwiceIsOneNode) {
  auto s = parse_timing_summary(
      R"({"v":1,"ts":1800000000,"step":5,"window_s":9,"hosts":["node-1","node-2","node-1"],)"
      R"("host":[0,1,2,1],"rank":[3,1,0,2],"now":[0.4,0.4,0.4,0.4],"best":[0.4,0.4,0.4,0.4]})");
  ASSERT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.windows.hosts, (std::vector<std::string>{"node-1", "node-2"}));
  EXPECT_EQ(s.windows.host_of(s.windows[2]), "node-1");
  auto v = judge_nodes(s.windows);
  ASSERT_EQ(v.nodes.size(), 2u);
  for (const auto& n : v.nodes) EXPECT_EQ(n.ranks.size(), 2u) << n.node;
  // Names repeated anywhere in the list, more than once: each is the node of its first listing,
  // numbered in the order the nodes first appear.
  auto repeats = parse_timing_summary(
      R"({"v":1,"ts":1800000000,"step":5,"hosts":["b","a","b","c","a","b"],)"
      R"("host":[0,1,2,3,4,5],"rank":[0,1,2,3,4,5],"now":[1,1,1,1,1,1],"best":[1,1,1,1,1,1]})");
  ASSERT_TRUE(repeats.error.empty()) << repeats.error;
  EXPECT_EQ(repeats.windows.hosts, (std::vector<std::string>{"b", "a", "c"}));
  std::vector<std::string> node_of_rank;
  for (const auto& w : repeats.windows) node_of_rank.push_back(repeats.windows.host_of(w));
  EXPECT_EQ(node_of_rank, (std::vector<std::string>{"b", "a", "b", "c", "a", "b"}));
  // Listed in order but one twice, side by side (a list in order, each once, is numbered
  // without a sort): still one node.
  auto side_by_side =
      parse_timing_summary(R"({"v":1,"ts":1800000000,"step":5,"hosts":["a","a","b"],)"
                           R"("host":[0,1,2],"rank":[0,1,2],"now":[1,1,1],"best":[1,1,1]})");
  ASSERT_TRUE(side_by_side.error.empty()) << side_by_side.error;
  EXPECT_EQ(side_by_side.windows.hosts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(side_by_side.windows.host_of(side_by_side.windows[1]), "a");
  auto twice = parse_timing_summary(
      R"({"v":1,"ts":1800000000,"step":5,"hosts":["node-1","node-2"],)"
      R"("host":[0,1,1],"rank":[3,1,3],"now":[0.4,0.4,0.4],"best":[0.4,0.4,0.4]})");
  EXPECT_NE(twice.error.find("twice"), std::string::npos) << twice.error;
}

// The summary's numbers are read by a fast path for plain decimals: it gives exactly what
// from_chars gives, bit for bit, over short and long decimals, leading zeros, integers and the
// forms it leaves to from_chars (exponents, 16+ digits, a trailing point).
TEST(RankTiming, ASummarysNumbersAreExactlyWhatFromCharsReads) {
  std::mt19937_64 rng(11);
  std::vector<std::string> texts = {"0",
                                    "0.0",
                                    "5.",
                                    "0.000001",
                                    "1e-3",
                                    "1.5E2",
                                    "007.250",
                                    "0.1",
                                    "123456789012345",
                                    "1234567890123456",
                                    "0.30000000000000004",
                                    "9007199254740993"};
  for (int i = 0; i < 20000; ++i) {
    std::string t = std::to_string(rng() % 100000);
    if (rng() % 4) {
      std::string frac = std::to_string(rng());
      t += "." + frac.substr(0, 1 + rng() % frac.size());
    }
    texts.push_back(t);
  }
  std::string host, rank, now;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const char* sep = i ? "," : "";
    host += sep + std::string("0");
    rank += sep + std::to_string(i);
    now += sep + texts[i];
  }
  auto s = parse_timing_summary(R"({"v":1,"ts":1,"step":1,"hosts":["node-1"],"host":[)" + host +
                                R"(],"rank":[)" + rank + R"(],"now":[)" + now + R"(],"best":[)" +
                                now + "]}");
  ASSERT_TRUE(s.error.empty()) << s.error;
  ASSERT_EQ(s.windows.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    double want = 0;
    std::from_chars(texts[i].data(), texts[i].data() + texts[i].size(), want);
    ASSERT_EQ(s.windows[i].now, want) << texts[i];
  }
}

// The fast path reads eight bytes at a time: whatever byte follows a number's digits, at
// whichever of those eight places, the number is what it is, and a byte that is not a digit,
// a point, a space or a comma makes the array not numbers.
TEST(RankTiming, ABytePastASummarysDigitsEndsTheNumberWhereverItFalls) {
  auto summary_with = [](const std::string& now) {
    return parse_timing_summary(R"({"v":1,"ts":1,"step":1,"hosts":["node-1"],"host":[0,0],)"
                                R"("rank":[0,1],"now":[)" +
                                now + R"(,0.4],"best":[0.4,0.4]})");
  };
  for (std::size_t digits = 1; digits <= 12; ++digits) {
    const std::string whole = std::string("123456789012").substr(0, digits);
    const std::string fraction = "0." + std::string("987654321098").substr(0, digits);
    for (const std::string& number : {whole, fraction}) {
      auto plain = summary_with(number + "  ");
      ASSERT_TRUE(plain.error.empty()) << number << ": " << plain.error;
      double want = 0;
      std::from_chars(number.data(), number.data() + number.size(), want);
      EXPECT_EQ(plain.windows[0].now, want) << number;
      for (int byte = 1; byte < 256; ++byte) {
        const char c = static_cast<char>(byte);
        if ((c >= '0' && c <= '9') || c == '.' || c == ',' || c == ' ' || c == '\t' || c == '\r' ||
            c == '\n' || c == ']' || c == 'e' || c == 'E')
          continue;
        auto bad = summary_with(number + c + "1234567");
        EXPECT_FALSE(bad.error.empty()) << number << " then byte " << byte;
      }
    }
  }
}

// One file for the job, read instead of one per rank; but only one written for this task.
TEST(RankTiming, ASummarySinceTheTaskStartedIsReadInsteadOfTheRankFiles) {
  TempDir dir;
  write_file(dir / "rank-0.jsonl",
             "{\"rank\":0,\"host\":\"node-7\",\"step\":1,\"compute_s\":0.4}\n");
  write_file(dir / "summary.json", R"({"v":1,"ts":1800000000,"step":5,"hosts":["node-1","node-2"],)"
                                   R"("host":[0,1],"rank":[0,1],"now":[0.4,0.5],"best":[0.4,0.4]})"
                                   "\n");
  auto now = read_rank_timing(dir.path, 6 << 10, 4096, 1'799'999'000);
  EXPECT_TRUE(now.error.empty()) << now.error;
  ASSERT_TRUE(now.windows);
  ASSERT_EQ(now.windows->size(), 2u);
  EXPECT_EQ(now.windows->host_of((*now.windows)[1]), "node-2");
  EXPECT_EQ(read_rank_timing(dir.path).windows, now.windows) << "unchanged: not parsed again";
  // Rewritten by rename, as the helper does, to the same length: read again.
  write_file(dir / "summary.tmp", R"({"v":1,"ts":1800000000,"step":5,"hosts":["node-1","node-2"],)"
                                  R"("host":[0,1],"rank":[0,1],"now":[0.4,0.6],"best":[0.4,0.4]})"
                                  "\n");
  std::filesystem::rename(dir / "summary.tmp", dir / "summary.json");
  auto rewritten = read_rank_timing(dir.path);
  ASSERT_TRUE(rewritten.windows);
  EXPECT_EQ((*rewritten.windows)[1].now, 0.6);
  // Rewritten again with the same figures, as each rewrite is with its own "ts": the same
  // windows, so the verdict on them is kept, and the new time.
  write_file(dir / "summary.tmp",
             R"({"v":1,"ts":1800000000.5,"step":6,"hosts":["node-1","node-2"],)"
             R"("host":[0,1],"rank":[0,1],"now":[0.4,0.6],"best":[0.4,0.4]})"
             "\n");
  std::filesystem::rename(dir / "summary.tmp", dir / "summary.json");
  auto same_figures = read_rank_timing(dir.path);
  EXPECT_EQ(same_figures.windows, rewritten.windows) << "the same figures: the same object";
  EXPECT_EQ(same_figures.written, 1800000000.5);
  EXPECT_TRUE(now.ranks.empty()) << "no rank file is opened beside a summary";
  auto earlier = read_rank_timing(dir.path, 6 << 10, 4096, 1'800'000'001);
  EXPECT_FALSE(earlier.windows) << "an earlier task's summary says nothing of this one";
  ASSERT_EQ(earlier.ranks.size(), 1u);
  EXPECT_EQ(earlier.ranks[0].host, "node-7");
  write_file(dir / "summary.json", "{\"v\":1,\"ts\":");
  auto bad = read_rank_timing(dir.path);
  EXPECT_NE(bad.error.find("summary.json: not a JSON object"), std::string::npos) << bad.error;
  EXPECT_TRUE(bad.ranks.empty() && !bad.windows) << "unknown, not judged on the rest";
}

// Rank 0 rewrites its summary at a steady cadence (every half window): once two rewrites have
// shown it, the file is not looked at again until 0.8 of the cadence after the last write, by
// the cycle's clock. What is not due cannot have changed in a run that keeps its pace; a clock
// that goes back, a new task, a summary never seen rewritten, and the 120 s cap all look.
TEST(RankTiming, ASummaryIsNotLookedAtUntilItsRewriteIsDue) {
  TempDir dir;
  auto write = [&](double ts, double pace) {
    char text[256];
    std::snprintf(text, sizeof text,
                  R"({"v":1,"ts":%.1f,"step":5,"hosts":["node-1","node-2"],)"
                  R"("host":[0,1],"rank":[0,1],"now":[0.4,%.2f],"best":[0.4,0.4]})"
                  "\n",
                  ts, pace);
    write_file(dir / "summary.tmp", text);
    std::filesystem::rename(dir / "summary.tmp", dir / "summary.json");
  };
  auto pace_at = [&](double now, double not_before = 0) {
    auto read = read_rank_timing(dir.path, 6 << 10, 4096, not_before, now);
    return read.windows ? (*read.windows)[1].now : -1.0;
  };
  const double t = 1'800'000'000;
  write(t, 0.41);
  EXPECT_EQ(pace_at(t + 1), 0.41);
  write(t + 100, 0.42);
  EXPECT_EQ(pace_at(t + 101), 0.42) << "one gap seen: not yet a cadence";
  write(t + 200, 0.43);
  EXPECT_EQ(pace_at(t + 201), 0.43) << "read: the cadence is now 100 s";
  write(t + 230, 0.44);  // sooner than its cadence (a run that sped up)
  EXPECT_EQ(pace_at(t + 231), 0.43) << "not due until 80 s after its write: not looked at";
  EXPECT_EQ(pace_at(t + 279), 0.43);
  EXPECT_EQ(pace_at(t + 200.5), 0.44) << "a clock gone back looks";
  write(t + 250, 0.45);  // gaps of 100 and 30 s: the cadence is 30 s, quiet for 24 s
  EXPECT_EQ(pace_at(t + 251), 0.45) << "the lesser of the last two gaps, not 100 s";
  write(t + 260, 0.46);  // gaps of 30 and 20 s: quiet until 266 s
  EXPECT_EQ(pace_at(t + 255, t + 253), 0.46) << "a new task's start looks";

  // A slow cadence (long steps, long windows) is quiet for at most 120 s.
  TempDir slow;
  dir.path.swap(slow.path);
  write(t, 0.41);
  EXPECT_EQ(pace_at(t), 0.41);
  write(t + 1000, 0.42);
  EXPECT_EQ(pace_at(t + 1000), 0.42);
  write(t + 2000, 0.43);
  EXPECT_EQ(pace_at(t + 2000), 0.43);
  write(t + 2010, 0.44);
  EXPECT_EQ(pace_at(t + 2119), 0.43);
  EXPECT_EQ(pace_at(t + 2120), 0.44) << "at most 120 s without a look";
  dir.path.swap(slow.path);
}

// The quiet time's two promises, over random timelines: a summary rewritten at a steady cadence
// (each gap within ±10 % of it) is never read late, and one rewritten at any cadence (gaps from a
// tenth to five times it, a clock that goes back now and then) is read at most 120 s late.
TEST(RankTiming, AQuietSummaryIsNeverReadLateAtItsCadenceAndAtMost120sLateAtAny) {
  std::mt19937 rng(75);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  int late_reads = 0, reads = 0;
  for (int run = 0; run < 40; ++run) {
    TempDir dir;
    const bool steady = run % 2 == 0;
    const double cadence = uniform(15, 300), start = 1'800'000'000;
    std::vector<double> writes{start};
    while (writes.back() < start + 100 * 30) {
      double next = writes.back() + cadence * (steady ? uniform(0.9, 1.1) : uniform(0.1, 5));
      writes.push_back(std::round(next * 1000) / 1000);  // as the helper rounds its "ts"
    }
    std::size_t written = 0;  // how many of `writes` are on disk
    for (int look = 1; look <= 100; ++look) {
      double now = start + 30 * look + uniform(0, 1);
      if (!steady && look % 17 == 0) now -= uniform(0, 90);  // the clock went back
      std::size_t due = written;
      while (due < writes.size() && writes[due] <= now) ++due;
      if (due > written) {
        written = due;
        char text[200];
        std::snprintf(text, sizeof text,
                      R"({"v":1,"ts":%.3f,"step":%zu,"hosts":["node-1"],"host":[0],"rank":[0],)"
                      R"("now":[0.4],"best":[0.4]})"
                      "\n",
                      writes[written - 1], written);
        write_file(dir / "summary.tmp", text);
        std::filesystem::rename(dir / "summary.tmp", dir / "summary.json");
      }
      if (written == 0) continue;
      auto read = read_rank_timing(dir.path, 6 << 10, 4096, 0, now);
      ASSERT_TRUE(read.error.empty()) << read.error;
      ++reads;
      const double newest = writes[written - 1];
      if (read.written == newest) continue;
      ++late_reads;
      EXPECT_FALSE(steady) << "run " << run << ", look " << look << ": read " << read.written
                           << ", newest " << newest << ", cadence " << cadence;
      EXPECT_LT(now - newest, 120) << "run " << run << ", look " << look;
    }
  }
  EXPECT_GT(late_reads, 0) << "the unsteady timelines never hit the quiet time: not a test";
  RecordProperty("reads", reads);
  RecordProperty("late_reads", late_reads);
}

// The helper's rows (its _node_rows) are what llmwatch's rule works out from every rank's window:
// 200 jobs of 2 to 20 nodes, 1 to 8 ranks a node, placed in blocks or cyclically, paces to the
// millisecond (so many are equal), some with one or two slow nodes. Each job is written twice by
// Python: as a column a rank ("v":1, every figure whole) and as the helper writes it now ("v":3,
// rows for its 8 slowest nodes), from the rows its gather gives (in rank order). The rows are
// the 8 slowest the rule finds, in its order, and the nodes without one are judged all the same.
TEST(RankTiming, TheHelpersNodeRowsAreWhatTheRuleWorksOutFromEveryRank) {
  TempDir dir;
  ASSERT_TRUE(run_helper_script(R"(import json, math, random, sys
sys.path.insert(0, sys.argv[1])
import llmwatch_timing
rng = random.Random(30)
with open(sys.argv[2], "w") as out:
    for job in range(200):
        nodes, per = rng.randint(2, 20), rng.randint(1, 8)
        cyclic, slow = rng.random() < 0.3, set(rng.sample(range(nodes), rng.choice((0, 1, 1, 2))))
        rows = []
        for rank in range(nodes * per):
            node = rank % nodes if cyclic else rank // per
            now = round(rng.lognormvariate(math.log(0.4), 0.05) * (1.3 if node in slow else 1), 3)
            rows.append((rank, "node-%d" % node, now, min(now, round(now * rng.uniform(0.8, 1), 3)), 9.5))
        hosts = sorted({r[1] for r in rows})
        v1 = {"v": 1, "ts": 1.8e9, "step": 5, "window_s": 9.5, "hosts": hosts,
              "host": [hosts.index(r[1]) for r in rows], "rank": [r[0] for r in rows],
              "now": [r[2] for r in rows], "best": [r[3] for r in rows]}
        v2 = llmwatch_timing._node_rows(rows)
        v2.update({"v": 3, "ts": 1.8e9, "step": 5, "window_s": 9.5})
        out.write(json.dumps(v1, separators=(",", ":")) + "\n")
        out.write(json.dumps(v2, separators=(",", ":")) + "\n")
)",
                                {dir / "jobs"}, 60));
  std::ifstream in(dir / "jobs");
  std::string columns, rows;
  int jobs = 0, suspects = 0;
  while (std::getline(in, columns) && std::getline(in, rows)) {
    auto a = parse_timing_summary(columns), b = parse_timing_summary(rows);
    ASSERT_TRUE(a.error.empty() && b.error.empty()) << a.error << b.error;
    auto by_ranks = judge_nodes(a.windows), by_rows = judge_nodes(b.windows);
    ASSERT_EQ(by_rows.nodes.size(), std::min<std::size_t>(8, by_ranks.nodes.size())) << jobs;
    ASSERT_EQ(by_rows.judged(), by_ranks.judged()) << jobs;
    for (std::size_t i = 0; i < by_rows.nodes.size(); ++i) {
      const NodeSpeed &x = by_ranks.nodes[i], &y = by_rows.nodes[i];
      ASSERT_EQ(x.node, y.node) << "job " << jobs << " at " << i;
      EXPECT_NEAR(x.relative, y.relative, 1e-6) << jobs << " " << x.node;
      EXPECT_NEAR(x.individual, y.individual, 1e-6) << jobs << " " << x.node;
      EXPECT_EQ(x.ranks, y.ranks) << jobs << " " << x.node;
      EXPECT_EQ(x.suspect, y.suspect) << jobs << " " << x.node;
      EXPECT_EQ(x.window_s, y.window_s);
    }
    // No node without a row is a suspect by the whole rule.
    for (std::size_t i = by_rows.nodes.size(); i < by_ranks.nodes.size(); ++i)
      EXPECT_FALSE(by_ranks.nodes[i].suspect) << jobs << " " << by_ranks.nodes[i].node;
    // Each row's figures against a brute-force reference from the columns: the peers' median,
    // and their spread (to the microsecond the helper writes them).
    int spreads = 0;
    for (const NodeWindow& row : b.windows.nodes) {
      const std::string& node = b.windows.hosts[row.host];
      std::vector<double> peers;
      for (const auto& w : a.windows)
        if (a.windows.host_of(w) != node) peers.push_back(w.now);
      const double m = median(peers);
      EXPECT_NEAR(row.peers, m, 1e-6) << jobs << " " << node;
      if (row.spread >= 0) {
        ++spreads;
        EXPECT_NEAR(row.spread, 1.4826 * mad(peers, m), 2e-6) << jobs << " " << node;
      }
    }
    EXPECT_EQ(spreads, std::min<int>(8, static_cast<int>(b.windows.nodes.size()))) << jobs;
    suspects += by_rows.suspect() != nullptr;
    ++jobs;
  }
  EXPECT_EQ(jobs, 200);
  EXPECT_GT(suspects, 60) << "slow nodes were found, not only agreed on";
}

// The helper's two modes judge alike (the same pace against the same peers): 16 ranks (threads
// gathering through a barrier, as torch.distributed's all_gather_object would) on 4 nodes, node-3's
// ranks computing 1.25x from step 20, written once as rank files and once as rank 0's summary.
TEST(RankTiming, ThePythonHelpersSummaryJudgesAsItsRankFilesDo) {
  TempDir files, summary;
  ASSERT_TRUE(run_helper_script(R"(import random, sys, threading
sys.path.insert(0, sys.argv[1])
from llmwatch_timing import RankTimer
N = 16
rows, barrier = [None] * N, threading.Barrier(N)
def gather(row):
    rows[row[0]] = row
    barrier.wait()
    out = list(rows)
    barrier.wait()
    return out
def rank(r, directory, summary):
    rng = random.Random(r)
    t = RankTimer(directory=directory, rank=r, host="node-%d" % (r // 4 + 1), summary=summary,
                  gather=gather)
    for step in range(40):  # two windows: the files' 6 KiB tails hold them whole
        slow = 1.25 if r // 4 == 2 and step >= 20 else 1
        t.add("compute", 0.4 * rng.lognormvariate(0, 0.1) * slow)
        t.step(step)
for directory, summary in ((sys.argv[2], False), (sys.argv[3], True)):
    threads = [threading.Thread(target=rank, args=(r, directory, summary)) for r in range(N)]
    [x.start() for x in threads]
    [x.join() for x in threads]
assert "torch" not in sys.modules
)",
                                {files.path, summary.path}));
  auto from_files = localise_stragglers(read_rank_timing(files.path).ranks);
  auto read = read_rank_timing(summary.path);
  ASSERT_TRUE(read.windows) << read.error;
  ASSERT_EQ(read.windows->nodes.size(), 4u) << "a row a node";
  ASSERT_EQ(read.windows->node_ranks.size(), 16u);
  auto from_summary = judge_nodes(*read.windows);
  ASSERT_TRUE(from_files.suspect() && from_summary.suspect());
  EXPECT_EQ(from_summary.suspect()->node, "node-3");
  ASSERT_EQ(from_files.nodes.size(), from_summary.nodes.size());
  for (std::size_t i = 0; i < from_files.nodes.size(); ++i) {
    const auto &a = from_files.nodes[i], &b = from_summary.nodes[i];
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.suspect, b.suspect) << a.node;
    EXPECT_NEAR(a.relative, b.relative, 1e-4) << a.node;
    // Rank 0 looks every half window, so its own best is taken over more windows.
    EXPECT_LE(b.individual, a.individual + 1e-4) << a.node;
    EXPECT_EQ(a.ranks, b.ranks) << a.node;
  }
}

}  // namespace
}  // namespace llmwatch
