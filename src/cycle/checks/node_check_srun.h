#pragma once
// `llmwatch node-check --json` on nodes through srun, and its reports: into a running watched
// job (--overlap, the node-health check) or as a short job of its own on the nodes a crashed
// run left (the quick check before a restart).
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/node_report.h"
#include "slurm/slurm_client.h"

namespace llmwatch {

struct SrunNodeCheck {
  std::vector<NodeReport> reports;
  std::string error;  // "" when at least one report came back
};

// `srun <placement> llmwatch [--config PATH] node-check --json`.
SrunNodeCheck node_check_by_srun(const Config& config, SlurmClient& slurm,
                                 std::vector<std::string> placement, const std::string& what);

}  // namespace llmwatch
