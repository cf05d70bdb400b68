#pragma once
// Deleting things, carefully: old checkpoints beyond keep_last (journaled, dry-run by
// default, never fewer than 2 complete, never one being written), and llmwatch's own old
// job logs so the self-perpetuating chain cannot eat a quota's inodes.
#include <string>

#include "config/config.h"
#include "probes/checkpoints.h"

namespace llmwatch {

class Store;

// Returns how many checkpoints were deleted (or would be, in dry-run).
int clean_checkpoints(const StorageSettings& s, const CheckpointScan& scan, Store& store,
                      double now, bool dry_run);
// Removes <state_dir>/logs/*.out older than max_age; returns how many.
int remove_old_own_logs(const std::string& state_dir, Seconds max_age, double now);

}  // namespace llmwatch
