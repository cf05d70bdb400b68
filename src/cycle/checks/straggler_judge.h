#pragma once
// The slow-node rule applied to one watched job in a cycle (#28): the ranks' timing read by
// the job-log check is localised (rules/straggler), the suspect's telemetry (its last
// node-check) added as evidence, and the eviction's cost sum (policy/eviction_cost) made from
// the job's own measured figures: its startup, its saves, its checkpoints, its time limit.
#include <vector>

#include "cycle/cycle_state.h"
#include "rules/finding.h"
#include "rules/gpu_telemetry_series.h"
#include "rules/straggler.h"

namespace llmwatch {

class Store;

// The findings for w (a straggler, or unknown when its timing cannot be read); fills
// w.straggler and w.eviction for the act phase.
std::vector<Finding> judge_straggler(JobWork& w, Store& store, double now);

// What the suspect's GPUs did over its slow window against every other node the verdict names:
// the series read in one transaction, so those the store keeps parsed cost no SQL (a standing
// finding reads the same series every cycle; bench/node_history_bench.cpp).
TelemetryEvidence gpu_evidence(Store& store, const StragglerVerdict& verdict,
                               const NodeSpeed& suspect, double now);

}  // namespace llmwatch
