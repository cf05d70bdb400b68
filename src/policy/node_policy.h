#pragma once
// What llmwatch does about node findings (rules/node_findings.h), and when draining must stop.
// Pure.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/finding.h"
#include "slurm/slurm_node.h"

namespace llmwatch {

// Why draining `node` now would exceed max_fraction of one of its partitions (of all nodes
// when sinfo gave no partitions), or "" when it may be drained. `draining_now` are the nodes
// already planned for draining since the snapshot `nodes` was taken (earlier in the same
// cycle): they count as out of service, or several drains in one cycle would each see only
// the snapshot and together exceed the fraction.
std::string drain_blocked(const std::string& node, const std::vector<SlurmNode>& nodes,
                          double max_fraction, const std::set<std::string>& draining_now = {});

// The plan of each node finding, by key: on_reset for a gpu-fault or gpu-warn a GPU reset would
// heal (reboot ASAP: drain, reboot when idle, resume), on_critical for other gpu-faults and
// lemons (without "drain" or "reboot" where that would exceed max_drained_fraction, which the
// finding's evidence then says; always with "alert"), "alert" for other gpu-warns, "undrain"
// and "alert" for repaired. Findings about jobs
// are left to the job policy; gpu-unknown gets no plan (unknown never acts).
std::map<std::string, std::vector<std::string>> plan_node_findings(
    const GpuSettings& g, const std::vector<SlurmNode>& nodes, std::vector<Finding>& findings);

}  // namespace llmwatch
