#pragma once
// From what a node's sources said to its verdict. Pure: the sources were read by node-check
// (each with a timeout); a source that could not be read yields an UNKNOWN item, never a
// CRITICAL one, so a hanging nvidia-smi can never drain a node by itself.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/gpu/node_inputs.h"
#include "rules/node_report.h"
#include "rules/xid_table.h"

namespace llmwatch {

NodeReport evaluate_node(const std::string& node, double now, const NodeInputs& in,
                         const GpuSettings& settings, const XidTable& xids);

}  // namespace llmwatch
