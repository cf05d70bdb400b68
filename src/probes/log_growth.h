#pragma once
// When each followed log grew, sampled between the cycle's reads (#30). A read clocks its step
// lines at the file's mtime, the last write; a step followed in the same read by other lines (the
// heartbeats of a rank stuck in a collective, a logging thread) was written earlier than that,
// and a hang was found up to a whole interval late (70 s after the last 10 s step at the
// defaults, against 45 s). The daemon stats its followed logs every kLogSampleEvery: the first
// sample whose size held a line's last byte bounds when it was written, by its mtime (that write
// came before the stat, so no later than the last write the stat saw). An upper bound, never
// earlier than the truth: a step is never clocked before it happened, and no run is called hung
// sooner than its own silence. `run --once` never samples: its reads clock as before.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace llmwatch {

inline constexpr std::chrono::seconds kLogSampleEvery{5};

struct GrowthSample {
  std::uint64_t size = 0;  // the file's size at the stat
  double mtime = 0;        // and its last write then
};

// One file's samples, oldest first (the file: dev and inode, as a LogCursor names it).
struct GrowthSeries {
  std::uint64_t dev = 0, inode = 0;
  std::deque<GrowthSample> samples;
  // Up to where its text has been looked at for a crash: by the cycle's read, then by samples.
  std::uint64_t checked = 0;
};

// The latest time the bytes before `end` can have been written: the mtime of the first sample
// that held them; 0 when none did (or the series is of another file than dev/inode).
double written_by(const GrowthSeries& series, std::uint64_t dev, std::uint64_t inode,
                  std::uint64_t end);

class LogGrowth {
 public:
  // The logs to sample: those the last cycle followed (at most kMaxPaths; the caller takes at
  // most kMaxPerJob of a job's). Other paths' samples are dropped.
  void follow(std::vector<std::string> paths);
  // Where the cycle's read of a followed file stopped: what it grew by past there is news for
  // take_end_seen (a crash printed between the read and the first sample is not missed).
  void read_upto(const std::string& path, std::uint64_t dev, std::uint64_t inode,
                 std::uint64_t offset);
  // One look at a file: kept when it grew. A replaced or truncated file starts over.
  void observe(const std::string& path, std::uint64_t dev, std::uint64_t inode, std::uint64_t size,
               double mtime);
  // Stats every followed log, each look kept as it is made; the round is waited for at most
  // `limit` (a hung mount holds up only its own round).
  void sample(std::chrono::milliseconds limit);
  // A copy of one path's samples, for a read on another thread.
  GrowthSeries series(const std::string& path) const;
  // Whether a sample since the last call saw a followed log print a crash signature (the
  // bytes it grew by, their last kEndLookBytes, read by the training-log parser): the daemon
  // then brings its next cycle forward instead of leaving the end to the next tick. The path.
  std::optional<std::string> take_end_seen();
  static constexpr std::size_t kEndLookBytes = 16 << 10;

  static constexpr std::size_t kMaxSamples = 64;  // 5 min at 5 s: a read every 30 s needs 6
  // At most this many logs of one job are sampled (per-rank logs: 512 files a job would be
  // 100,000 stats a second at 1,000 jobs), and this many in all.
  static constexpr std::size_t kMaxPerJob = 4, kMaxPaths = 4096;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> followed_;
  std::optional<std::string> end_seen_;
  std::map<std::string, GrowthSeries> series_;
};

// The process's: the daemon samples it between cycles, every cycle's reads consult it.
LogGrowth& log_growth();

}  // namespace llmwatch
