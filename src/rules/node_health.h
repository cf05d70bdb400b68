#pragma once
// From what a node's sources said to its verdict. Pure: the sources were read by node-check
// (each with a timeout); a source that could not be read yields an UNKNOWN item, never a
// CRITICAL one, so a hanging nvidia-smi can never drain a node by itself.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/gpu/dcgmi.h"
#include "probes/gpu/gpu_record.h"
#include "probes/gpu/xid_line.h"
#include "rules/node_report.h"
#include "rules/xid_table.h"

namespace llmwatch {

// What each source gave; a source that was not configured stays nullopt with no error.
struct NodeInputs {
  std::optional<std::vector<XidEvent>> xids;
  std::optional<GpuParse> gpus;
  std::optional<std::vector<NvlinkGpu>> nvlink;
  std::optional<DcgmiDiag> diag;
  std::optional<std::string> health;  // dcgmi health -c overall
  // Per source: why it could not be read ("nvidia-smi: timed out after 20s").
  std::vector<std::pair<std::string, std::string>> errors;
  int gpu_processes = -1;
};

NodeReport evaluate_node(const std::string& node, double now, const NodeInputs& in,
                         const GpuSettings& settings, const XidTable& xids);

}  // namespace llmwatch
