#pragma once
// One row of the goodput ledger (#29): GPU-seconds of one UTC day, run, bucket, cause and node.
#include <cstdint>
#include <string>

namespace llmwatch {

struct GoodputRow {
  std::int64_t day = 0;  // days since the epoch, UTC
  std::string job, bucket, cause, node;
  double gpu_seconds = 0;
};

}  // namespace llmwatch
