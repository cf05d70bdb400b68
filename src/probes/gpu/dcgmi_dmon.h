#pragma once
// `dcgmi dmon -e <fields> -c 1` (#28): the slow node's GPU telemetry where DCGM is present, the
// same figures node-check reads from nvidia-smi. dcgmi prints a header naming each field by a
// short name that differs between DCGM releases, a units line, then one row per entity:
//
//   #Entity   SMCLK   SMMAX   DVCCTR  ...
//   ID        MHZ     MHZ             ...
//   GPU 0     1980    1980    0       ...
//
// Columns are read by the position of the field asked for, never by name. Integers are printed
// in decimal (the clock-event reasons are DCGM's bitmask), doubles with 3 decimals, a value
// DCGM does not have as "N/A" (not known, never 0). Rows of other entities (GPU-I, GPU-CI,
// Switch) are skipped.
#include <string>
#include <string_view>
#include <vector>

#include "probes/gpu/gpu_telemetry.h"

namespace llmwatch {

// The field IDs asked for, in the order of the columns: SM clock, its maximum, clock-event
// reasons, temperature, power, enforced power limit, GPU utilisation, PCIe generation (current,
// max) and width (current, max).
extern const char* const kDcgmiDmonFields;

struct DmonParse {
  std::vector<GpuTelemetry> gpus;
  std::string error;  // the output is not dmon's table of these fields: unknown, never healthy
  bool ok() const { return error.empty(); }
};

DmonParse parse_dcgmi_dmon(std::string_view text);

}  // namespace llmwatch
