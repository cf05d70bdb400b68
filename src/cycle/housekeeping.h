#pragma once
// llmwatch's own old job logs go, so the self-perpetuating chain cannot eat a quota's inodes.
// (Old checkpoints are the cleanup action's: plugins/storage/cleanup.cpp.)
#include <set>
#include <string>

#include "config/config.h"

namespace llmwatch {

// Removes <state_dir>/logs/*.out older than max_age; returns how many.
int remove_old_own_logs(const std::string& state_dir, Seconds max_age, double now);

class Store;

// Removes the copies of batch scripts kept for restarts (<state_dir>/scripts/kept/) that no
// [[job]] in `labels` names as its task's (a job gone from the config, a row forgotten);
// returns how many. Each copy is its owner's words: none outlives the job it was kept for.
int remove_unnamed_kept_scripts(const std::string& state_dir, Store& store,
                                const std::set<std::string>& labels);

}  // namespace llmwatch
