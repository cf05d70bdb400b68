#pragma once
// llmwatch's own old job logs go, so the self-perpetuating chain cannot eat a quota's inodes.
// (Old checkpoints are the cleanup action's: plugins/storage/cleanup.cpp.)
#include <string>

#include "config/config.h"

namespace llmwatch {

// Removes <state_dir>/logs/*.out older than max_age; returns how many.
int remove_old_own_logs(const std::string& state_dir, Seconds max_age, double now);

}  // namespace llmwatch
