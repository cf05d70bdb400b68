#pragma once
// Per-rank section times, as share/llmwatch/python/llmwatch_timing.py writes them: one JSON
// line per step and rank, {"rank":12,"host":"node-3","step":100,"compute_s":0.41,"wait_s":0.02,
// "ts":1800000000.5}, in <timing_dir>/rank-<rank>.jsonl. In synchronous training every rank
// shows the same step time; the compute before the collective (or how little a rank waits in
// it) is what tells the slow one apart.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmwatch {

struct RankSample {
  std::int64_t step = 0;
  double ts = 0, compute_s = 0, wait_s = 0;
};

struct RankSeries {
  int rank = -1;
  std::string host;                 // the node the rank runs on (as the helper saw it)
  std::vector<RankSample> samples;  // in file order, oldest first
};

// One rank's judged window: the median compute of its last steps, and the lowest such median of
// its earlier whole windows (its own best). What the rule judges; what a large job's rank 0
// writes for every rank (summary.json), so that llmwatch reads one file, not one per rank.
struct RankWindow {
  int rank = -1;
  std::uint32_t host = 0;  // the node it runs on: RankWindows::hosts[host]
  double now = 0, best = 0, window_s = 0;
};

// One node's figures as the job's rank 0 worked them out (summary.json "v":2): its slowest
// rank's window and that rank's own best, and the median of every rank's window on the job's
// other nodes, with their spread for the few slowest nodes. The rule (rules/straggler.h) judges
// them as it judges the same figures worked out here from every rank's window: a row a node,
// not a column a rank, is what a 512-rank job's summary costs to read a cycle.
struct NodeWindow {
  std::uint32_t host = 0;  // RankWindows::hosts[host]
  int slowest = -1;        // its slowest rank (the first such, by rank)
  double now = 0, best = 0;
  double peers = 0;    // median window of the ranks on the other nodes
  double spread = -1;  // 1.4826 x their median absolute deviation from it; < 0: not given
  std::uint32_t ranks_from = 0, ranks_to = 0;  // its ranks: RankWindows::node_ranks[from, to)
};

// A job's ranks' windows, and the nodes they name once each: a node's name is not copied,
// compared or hashed per rank (at 1,000 jobs of 512 ranks, that was most of reading a summary
// and judging it; bench/cycle_bench.cpp --ranks 512). Or, from a "v":2 summary, a row a node.
struct RankWindows {
  std::vector<std::string> hosts;
  std::vector<RankWindow> ranks;
  std::vector<NodeWindow> nodes;  // "v":2 and 3: the nodes' figures; `ranks` is then empty
  std::vector<int> node_ranks;    // "v":2 and 3: every node's ranks, one node after another
  // "v":2 and 3: hosts[h]'s ranks are node_ranks[host_ranks[h], host_ranks[h + 1]), whether it
  // has a row or not.
  std::vector<std::uint32_t> host_ranks;
  // "v":3: `nodes` holds rows for rank 0's slowest few alone (its views show no more); every
  // other host was judged by it and is at least as fast as they are.
  bool slowest_only = false;
  double window_s = 0;  // "v":2 and 3: the time the judged windows cover
  // "v":2 and 3: the text of its "hosts" and "ranks" arrays, as a size and a hash each: which nodes
  // and ranks the job has. A rewrite with the same layout takes both from the summary before.
  struct Layout {
    std::size_t hosts_size = 0, hosts_hash = 0, ranks_size = 0, ranks_hash = 0;
    bool operator==(const Layout&) const = default;
  } layout;
  std::size_t size() const { return ranks.size(); }
  bool empty() const { return ranks.empty() && nodes.empty() && !slowest_only; }
  const RankWindow& operator[](std::size_t i) const { return ranks[i]; }
  auto begin() const { return ranks.begin(); }
  auto end() const { return ranks.end(); }
  const std::string& host_of(const RankWindow& w) const { return hosts[w.host]; }
};

struct RankTimingRead {
  std::vector<RankSeries> ranks;  // from rank-<N>.jsonl, one file per rank
  // From summary.json, written since the task started; null when there is none. While rank 0
  // has not rewritten it, every read gives the same object (its verdict can be kept).
  std::shared_ptr<const RankWindows> windows;
  // When the newest of it was written (the summary's ts, or the newest sample's); 0 unknown.
  double written = 0;
  int bad_lines = 0;  // lines that were not a timing record (skipped, never guessed)
  // Samples a rank's judged window holds; 0: the rule's default (20 steps). A sample from
  // Megatron's log is already a mean over its log interval (probes/megatron_rank_times.h).
  std::size_t window = 0;
  // The ranks were placed on nodes by the job's layout, not by a host each rank wrote
  // (Megatron's log names none): a guess a second witness must back before a node is evicted.
  bool placed_by_layout = false;
  // Names what `ranks` hold when the source can (Megatron's kept intervals: the task and the
  // last interval's number): the same version, the same ranks, so their verdict can be kept.
  std::string version;
  std::string error;  // the directory cannot be read: unknown, never "healthy"
};

// One file's text (its tail): the records it holds. A line that is not a complete record with
// a rank, a step and a non-negative compute time is skipped and counted.
RankSeries parse_rank_timing(std::string_view text, int* bad_lines = nullptr);

// At most this many ranks are read from a log: a corrupt line cannot make a world unbounded.
inline constexpr int kMaxLogRank = 1 << 20;

// One log interval of every rank's compute, as a log prints it (Megatron's timers, or each
// rank's own line): the kept intervals are judged like the helper's samples.
struct RankTimesBlock {
  std::int64_t seq = 0;  // the interval's number (Megatron's block, from 1, or the step): aligns
  std::map<int, double> compute_s;  // rank -> compute before the collective, seconds
};

// A summary.json as the helper's rank 0 writes it (share/llmwatch/python/llmwatch_timing.py),
// a row a node:
//   {"v":2,"ts":1800000123.4,"step":1200,"window":20,"window_s":191.3,
//    "hosts":["node-1","node-2"],"ranks":["0-7","8-15"],"slowest":[3,12],"now":[0.41,0.52],
//    "best":[0.40,0.40],"peers":[0.41,0.40],"spread_of":[1,0],"spread":[0.004,0.005]}
// "ranks": each node's ranks, as ranges apart by spaces ("0-3 8-11"); "slowest", "now", "best":
// its slowest rank, that rank's window median and its own best; "peers": the median window of
// the ranks on the other nodes; "spread": 1.4826 x their median absolute deviation from it, for
// the nodes "spread_of" names (the slowest few: only a slow node needs it). Or, as helpers
// before it wrote, a column a rank:
//   {"v":1,"ts":1800000123.4,"step":1200,"window":20,"window_s":191.3,"hosts":["node-1"],
//    "host":[0,0],"rank":[0,1],"now":[0.41,0.40],"best":[0.40,0.40]}
// Or, as the helper writes it now ("v":3), rows for its slowest few nodes alone (a 64-node job's
// rewrite is then 8 rows to read and judge, not 64): "hosts" and "ranks" as in "v":2, for every
// node; "rows": which of them have a row, by index; "slowest", "now", "best", "peers" and
// "spread" a number a row each:
//   {"v":3,"ts":1800000123.4,"step":1200,"window":20,"window_s":191.3,
//    "hosts":["node-1","node-2","node-3"],"ranks":["0-7","8-15","16-23"],"rows":[1,2],
//    "slowest":[12,19],"now":[0.52,0.41],"best":[0.40,0.40],"peers":[0.41,0.41],
//    "spread":[0.005,0.004]}
// Anything that is not such a summary, whole, is an error with its reason: the job's timing is
// then unknown, never healthy.
struct TimingSummary {
  double ts = 0;
  std::int64_t step = 0;
  RankWindows windows;
  std::string error;
};
// `before`: the same job's summary read before, if any. Rank 0 rewrites the figures every few
// steps, but the job's nodes and ranks stay as they were: where its "hosts" and "ranks" arrays
// are the text they were, their nodes and ranks are taken from `before`, not read again (at
// 1,000 jobs of 512 ranks they were a third of reading the rewritten summaries).
TimingSummary parse_timing_summary(std::string_view text, const RankWindows* before = nullptr);

// The last `tail_bytes` of every rank-*.jsonl (6 KiB: the last ~55 steps, the judged window and one
// before it for the own-best score) in `dir` (at most `max_files`, lowest ranks first): bounded
// work whatever the files grew to. A first partial line is dropped. A summary.json written at or
// after `not_before` (the task's start) is read instead, and no rank file is opened. With `now`
// (the cycle's clock), a summary read before is not looked at again until its rewrite is due by
// its own cadence (0.8 of the lesser of its last two gaps, at most 120 s): rank 0 rewrites it
// every half window, and at 1,000 jobs most are not due in a given cycle.
RankTimingRead read_rank_timing(const std::string& dir, std::size_t tail_bytes = 6 << 10,
                                std::size_t max_files = 4096, double not_before = 0,
                                double now = 0);

}  // namespace llmwatch
