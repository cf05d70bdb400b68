#pragma once
// Per-rank compute times from lines every rank prints itself (#28), for runs that neither ship
// the helper nor use Megatron's `times across ranks` block. A line is a rank's when it carries
// the rank's prefix:
//
//   [rank12]: iteration 340 | forward-compute 612.3 ms | backward-compute 1203.6 ms
//   12: step 340 compute_ms=1815.9                       (srun --label: the task is the rank)
//
// and holds a step and a compute time with its unit. A rank's compute is `forward-compute` plus
// `backward-compute` where the line names them, else `compute` (`compute time`, `compute_ms`,
// `compute (ms)`, `compute_s`, ...): the time before the rank waits in the collective, which is
// what tells the slow GPU apart (every rank's step time is the same). A number whose unit the
// line does not say is never guessed: the line is counted, so the finding can say why.
//
// `[defaultN]:` (torchrun's local rank) is not a rank: every node has a local rank 0.
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "probes/rank_timing.h"

namespace llmwatch {

struct RankLine {
  int rank = -1;
  std::int64_t step = -1;
  double compute_s = -1;  // < 0: the line names a compute time without a unit
};

// Who printed a line, as its prefix says: rank -1 where it names none; `srun_task` where it is
// srun's --label ("12: ", SLURM_PROCID), not a framework's "[rank12]:" (alone or inside it).
struct LinePrinter {
  int rank = -1;
  bool srun_task = false;
};
LinePrinter line_printer(std::string_view line);

// One line: its rank, step and compute when it is a rank's timing line; nullopt otherwise.
std::optional<RankLine> parse_rank_line(std::string_view line);

// Each rank's lines gathered by step. A step's block is taken once it holds every rank seen so
// far and a later step has begun, or once kOpenSteps later steps have begun (a rank whose lines
// come late, or never, does not hold the others back). A line for a step already taken is
// dropped: the block was judged without it.
class RankLineTimes {
 public:
  friend struct LogRankTimes;  // saves and restores what is still open
  void feed(std::string_view line);
  std::vector<RankTimesBlock> take();
  // Lines that named a compute time without a unit (ms or s).
  int lines_without_unit() const { return without_unit_; }
  // Changes with every line it keeps (for saving only what moved).
  std::int64_t place() const { return kept_; }

  static constexpr std::size_t kOpenSteps = 4;

 private:
  void close_oldest();

  std::map<std::int64_t, std::map<int, double>> open_;  // step -> rank -> compute, seconds
  std::int64_t taken_upto_ = -1;  // the last step taken: its lines and older ones are late
  std::size_t world_ = 0;         // the most ranks one step held
  int without_unit_ = 0;
  std::int64_t kept_ = 0;
  std::vector<RankTimesBlock> done_;
};

}  // namespace llmwatch
