#pragma once
// Which nodes llmwatch may drain or undrain, and when draining must stop. Pure.
#include <string>
#include <vector>

#include "slurm/slurm_node.h"

namespace llmwatch {

inline constexpr const char* kOwnReasonPrefix = "llmwatch:";

// Why draining `node` now would exceed max_fraction of one of its partitions (of all nodes
// when sinfo gave no partitions), or "" when it may be drained.
std::string drain_blocked(const std::string& node, const std::vector<SlurmNode>& nodes,
                          double max_fraction);

// A drained node llmwatch may put back into service: its reason is llmwatch's own, or
// (when allowed) Slurm's "Kill task failed".
bool undrain_allowed(const SlurmNode& node, bool kill_task_failed_too);

}  // namespace llmwatch
