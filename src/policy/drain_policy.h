#pragma once
// Which nodes llmwatch may drain or undrain, and when draining must stop. Pure.
#include <set>
#include <string>
#include <vector>

#include "slurm/slurm_node.h"

namespace llmwatch {

inline constexpr const char* kOwnReasonPrefix = "llmwatch:";

// Why draining `node` now would exceed max_fraction of one of its partitions (of all nodes
// when sinfo gave no partitions), or "" when it may be drained. `draining_now` are the nodes
// already planned for draining since the snapshot `nodes` was taken (earlier in the same
// cycle): they count as out of service, or several drains in one cycle would each see only
// the snapshot and together exceed the fraction.
std::string drain_blocked(const std::string& node, const std::vector<SlurmNode>& nodes,
                          double max_fraction, const std::set<std::string>& draining_now = {});

// A drained node llmwatch may put back into service: its reason is llmwatch's own, or
// (when allowed) Slurm's "Kill task failed".
bool undrain_allowed(const SlurmNode& node, bool kill_task_failed_too);

}  // namespace llmwatch
