#pragma once
// Per-rank section times, as share/llmwatch/python/llmwatch_timing.py writes them: one JSON
// line per step and rank, {"rank":12,"host":"node-3","step":100,"compute_s":0.41,"wait_s":0.02,
// "ts":1800000000.5}, in <timing_dir>/rank-<rank>.jsonl. In synchronous training every rank
// shows the same step time; the compute before the collective (or how little a rank waits in
// it) is what tells the slow one apart.
#include <cstddef>
#include <cstdint>
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

struct RankTimingRead {
  std::vector<RankSeries> ranks;
  int bad_lines = 0;  // lines that were not a timing record (skipped, never guessed)
  std::string error;  // the directory cannot be read: unknown, never "healthy"
};

// One file's text (its tail): the records it holds. A line that is not a complete record with
// a rank, a step and a non-negative compute time is skipped and counted.
RankSeries parse_rank_timing(std::string_view text, int* bad_lines = nullptr);

// The last `tail_bytes` of every rank-*.jsonl (6 KiB: the last ~55 steps, the judged window and one
// before it for the own-best score) in `dir` (at most `max_files`, lowest ranks first): bounded
// work whatever the files grew to. A first partial line is dropped.
RankTimingRead read_rank_timing(const std::string& dir, std::size_t tail_bytes = 6 << 10,
                                std::size_t max_files = 4096);

}  // namespace llmwatch
