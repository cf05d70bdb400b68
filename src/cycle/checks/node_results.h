#pragma once
// node-check's results, as each node's check writes them (<results_dir>/<node>.json, by
// rename): the verdicts llmwatch judges the nodes it manages by.
#include <chrono>
#include <optional>
#include <string>

#include "rules/node_report.h"

namespace llmwatch {

// The node's latest report; nullopt when there is none or it is not a report. Every managed
// node's is looked at every cycle, and most were not rewritten since: a file as it was (by its
// stat, and changed more than `settle` ago: file times are coarse) is neither read nor parsed
// again.
std::optional<NodeReport> read_node_result(
    const std::string& dir, const std::string& node,
    std::chrono::nanoseconds settle = std::chrono::seconds(2));

}  // namespace llmwatch
