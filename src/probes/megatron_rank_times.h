#pragma once
// Per-rank compute times from Megatron-LM's own log (#28), for runs that do not ship the
// helper. With `--timing-log-option all` and `--timing-log-level 2`, Megatron prints at each
// log interval, after its iteration line, every rank's timers (milliseconds, averaged over
// the interval):
//
//   times across ranks (ms):
//     forward-compute:
//        rank  0: 612.31
//        rank  1: 610.87
//     backward-compute:
//        rank  0: 1203.55
//        ...
//
// A rank's compute is its forward-compute plus backward-compute: the time before it waits in
// the collective, which is what tells the slow GPU apart (every rank's step time is the
// same). forward-backward includes that wait and is not used; a block with neither compute
// timer (level 1) gives nothing and is counted, so the finding can say what is missing.
// Lines may carry a launcher's prefix ("[default0]:"): the text after the last "]:" is read, and
// a line with another prefix than the block's header (another rank's, interleaved) is skipped.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "probes/rank_line_times.h"
#include "probes/rank_timing.h"

namespace llmwatch {

class MegatronRankTimes {
 public:
  friend struct LogRankTimes;  // saves and restores the parser's place
  // One log line, in order. A block ends at the first line that is not part of it.
  void feed(std::string_view line);
  // The blocks that ended since the last take, oldest first.
  std::vector<RankTimesBlock> take();
  // Blocks that held no compute timer (Megatron's timing level 1).
  int blocks_without_compute() const { return without_compute_; }
  // Where the parser stands: changes with every line of a block it takes (for saving only
  // what moved).
  std::int64_t place() const {
    return (seq_ * 2 + in_block_) * 1'000'003 + static_cast<std::int64_t>(current_.size());
  }

  static constexpr int kMaxRank = kMaxLogRank;

 private:
  void end_block();

  bool in_block_ = false;
  std::string prefix_;          // the header's launcher prefix: the block's lines carry the same
  bool compute_timer_ = false;  // the timer whose rank lines are being read is a compute one
  bool saw_compute_ = false;
  std::int64_t seq_ = 0;
  int without_compute_ = 0;
  std::map<int, double> current_;
  std::vector<RankTimesBlock> done_;
};

// Blocks a window of the rule holds. A Megatron block is already a mean over its log interval;
// a rank's own line is one step's time, judged over as many steps as the helper's samples (10
// let healthy jitter name a node: RankLineTimes.HealthyNoiseThroughTheLinesNamesNoNode). Three
// windows are kept: the recent one and two earlier for the rank's own best.
inline constexpr std::size_t kLogBlocksJudged = 5, kLogBlocksKept = 3 * kLogBlocksJudged;
inline constexpr std::size_t kLineStepsJudged = 20, kLineStepsKept = 3 * kLineStepsJudged;

// A job's per-rank timing from its log as llmwatch follows it across cycles: the parsers
// (Megatron's block, or each rank's own line: a block can be cut between two reads, a step's
// lines too) and the blocks kept for judging, each stamped with when its read saw it written.
struct LogRankTimes {
  std::string task;  // whose they are: a job's task and its start ("" until known)
  MegatronRankTimes parser;
  RankLineTimes lines;
  std::vector<std::pair<double, RankTimesBlock>> blocks;  // (written, block), oldest first
  // The job's log bytes read (JobProgress::bytes_read) when the parsers stood where they do. A
  // record saved before the last reads (the daemon saves it now and then, not every cycle)
  // holds a block or a step cut at another place than the log's cursor: see drop_cut.
  std::uint64_t read_to = 0;
  // When this process last saved it; not in the record (a restored one is saved at its next
  // move: `run --once` is a new process each cycle).
  double saved_at = 0;
  // One log line, in order, to both parsers.
  void feed(std::string_view line) {
    parser.feed(line);
    lines.feed(line);
  }
  // The blocks both parsers finished since the last call, as written at `written`.
  void keep_taken(double written);
  void keep(std::vector<RankTimesBlock> fresh, double written, std::size_t at_most);
  // Forgets the block and the steps the parsers had open (the kept blocks stay): their lines
  // would otherwise be joined to lines from another place in the log.
  void drop_cut();
  // Whether the parsers hold such a cut block or open steps.
  bool holds_cut() const;
  // Whether the kept blocks are each rank's own lines (a step each), not Megatron's blocks.
  bool from_rank_lines() const { return lines.place() > 0 && parser.place() == 0; }
  // Moves with every line either parser keeps, and with every block kept.
  std::tuple<std::int64_t, std::int64_t, std::size_t> place() const {
    return {parser.place(), lines.place(), blocks.size()};
  }
  // As the store keeps it between cycles (`run --once`, the self-perpetuating job, is a new
  // process each cycle): the blocks, times to Megatron's own 0.01 ms, and the parsers' places
  // in a block or step cut between two reads. Text that is not such a record gives nothing.
  std::string to_json() const;
  static std::optional<LogRankTimes> from_json(const std::string& text);
};

// The state of `key` (a job's label), taken out of this process's memory for one read and put
// back after it; null when none is held (the caller then restores it from the store).
std::shared_ptr<LogRankTimes> take_log_rank_times(const std::string& key);
void put_log_rank_times(const std::string& key, std::shared_ptr<LogRankTimes> state);

// The kept blocks as rank series, the ranks laid out in blocks over `hosts` (the task's nodes
// in Slurm's order): ranks 0..k-1 on the first node, and so on, as srun's default block
// distribution and torchrun's node_rank=SLURM_NODEID place them. A world that does not divide
// evenly over the nodes is an error, never a guess.
RankTimingRead rank_timing_from_blocks(const LogRankTimes& state,
                                       const std::vector<std::string>& hosts);

}  // namespace llmwatch
