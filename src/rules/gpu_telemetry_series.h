#pragma once
// A node's GPU telemetry over time (#28): the last node-checks' samples, kept per node, and
// what they say about a node a slow-node finding names. One sample says little (a clock dips
// for a moment); the finding cites what held over its slow window, against the same figures on
// the job's other nodes. Pure.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "probes/gpu/gpu_telemetry.h"

namespace llmwatch {

// A node's GPUs at one node-check; a node's series is these, oldest first (the store keeps the
// last 16 of each node a watched task runs on: Store::telemetry_series).
struct TelemetrySample {
  double ts = 0;
  std::vector<GpuTelemetry> gpus;
};
using TelemetrySeries = std::vector<TelemetrySample>;

// What a suspect node's GPUs did since `since`, against the job's other nodes.
struct TelemetryEvidence {
  // The GPU that shows why, for the finding's headline and the drain reason ("GPU 2 HW
  // Slowdown, SM clock 1095/1980 MHz"); "" when its GPUs show nothing against their peers.
  std::string cause;
  std::vector<std::string> lines;  // per GPU that stands out, or the absence of a GPU cause
};
// The peers are pointed at: the cycle hands the store's kept series, not copies.
TelemetryEvidence telemetry_evidence(const std::string& node, const TelemetrySeries& own,
                                     std::span<const TelemetrySeries* const> peers, double since);
// The same, for peers held by value.
TelemetryEvidence telemetry_evidence(const std::string& node, const TelemetrySeries& own,
                                     const std::vector<TelemetrySeries>& peers, double since);

}  // namespace llmwatch
