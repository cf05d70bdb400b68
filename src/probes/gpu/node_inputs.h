#pragma once
// What the node-check sources observed on one node (the probe's output, the node-health
// rule's input). A source that was not configured stays nullopt with no error.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "probes/gpu/dcgmi.h"
#include "probes/gpu/gpu_record.h"
#include "probes/gpu/gpu_telemetry.h"
#include "probes/gpu/xid_line.h"
#include "probes/nagios_plugin.h"

namespace llmwatch {

struct NodeInputs {
  std::optional<std::vector<XidEvent>> xids;
  std::optional<GpuParse> gpus;
  std::optional<std::vector<NvlinkGpu>> nvlink;
  std::optional<DcgmiDiag> diag;
  std::optional<std::string> health;              // dcgmi health -c overall
  std::optional<std::vector<GpuTelemetry>> dmon;  // dcgmi dmon: telemetry where DCGM is present
  // Why dmon gave nothing. Telemetry is evidence, not health: this never makes the node UNKNOWN
  // (a node whose host engine is down must still pass its check, to be undrained after repair).
  std::string dmon_error;
  // Per source: why it could not be read ("nvidia-smi: timed out after 20s").
  std::vector<std::pair<std::string, std::string>> errors;
  int gpu_processes = -1;
  // The site's own [[check]] where = "nodes" plugins (NHC, gcm, scripts), as this node ran them.
  std::vector<NodePluginRun> plugins;
};

}  // namespace llmwatch
