#pragma once
// The checkpoints in a run's checkpoint directory: each entry matching a glob, its size
// (summed over its files, with a cap on how many files are visited) and modification time.
// An entry modified in the last `settle` seconds, or named *.tmp / *-unfinished / *.partial,
// is still being written and never counts as complete or gets deleted.
#include <cstdint>
#include <string>
#include <vector>

namespace llmwatch {

struct Checkpoint {
  std::string path;
  std::uint64_t bytes = 0;
  double mtime = 0;
  bool mtime_known = true;  // false: a stat failed; nothing is deleted while any is unknown
  bool complete = false;
};

struct CheckpointScan {
  std::vector<Checkpoint> checkpoints;  // oldest first
  std::string error;
  bool ok() const { return error.empty(); }
};

CheckpointScan scan_checkpoints(const std::string& dir, const std::string& glob, double now,
                                double settle = 120);

// The complete checkpoints to delete so that `keep_last` (at least 2) complete ones remain.
std::vector<Checkpoint> cleanup_candidates(const CheckpointScan& scan, int keep_last);

}  // namespace llmwatch
