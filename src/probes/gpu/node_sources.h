#pragma once
// Runs every configured node-check source, concurrently and each with its own timeout:
// the kernel log, nvidia-smi (query, nvlink -s, compute processes), dcgmi diag and health.
// A source that fails or hangs is recorded as an error (UNKNOWN), never as a fault.
#include <string>

#include "config/config.h"
#include "probes/gpu/node_inputs.h"

namespace llmwatch {

// The --query-gpu fields node-check asks for, with kNvidiaSmiCounterFields after them; a driver
// that rejects a field is asked again without the counters, then with kNvidiaSmiBaseFields.
extern const char* const kNvidiaSmiFields;
extern const char* const kNvidiaSmiCounterFields;
extern const char* const kNvidiaSmiBaseFields;

NodeInputs gather_node_inputs(const GpuSettings& s, const std::string& node);

}  // namespace llmwatch
