#pragma once
// Storage findings in terms an operator acts on: space and inodes against the usable
// capacity ("80% is the new 100%" on some parallel filesystems), an absolute minimum free,
// the quota, and the time to full at the current (robust) rate.
#include <optional>
#include <vector>

#include "config/config.h"
#include "probes/checkpoints.h"
#include "probes/storage_probe.h"
#include "rules/finding.h"

namespace llmwatch {

struct StorageFigures {
  double used_bytes = 0, usable_bytes = 0, used_inodes = 0, total_inodes = 0;
  std::optional<double> rate_bytes_per_s;  // robust growth rate
  std::optional<double> seconds_to_full;
};

StorageFigures storage_figures(const StorageSettings& s, const StorageObservation& o,
                               const std::vector<std::pair<double, double>>& used_series);

std::vector<Finding> evaluate_storage(const StorageSettings& s, const StorageObservation& o,
                                      const StorageFigures& f);

// Checkpoint findings: the next one will not fit; fewer than 2 complete ones.
std::vector<Finding> evaluate_checkpoints(const StorageSettings& s, const StorageObservation& o,
                                          const StorageFigures& f, const CheckpointScan& scan);

}  // namespace llmwatch
