#pragma once
// `llmwatch node-check --json` on nodes through srun, and its reports: into a running watched
// job (--overlap, the node-health check) or as a short job of its own on the nodes a crashed
// run left (the quick check before a restart).
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/node_report.h"
#include "slurm/slurm_client.h"
#include "slurm/slurm_job.h"
#include "util/time_budget.h"

namespace llmwatch {

struct SrunNodeCheck {
  std::vector<NodeReport> reports;
  std::string error;      // "" when at least one report came back
  bool deferred = false;  // not run: the cycle's remote budget had no time left for it
};

struct NodeCheckAsk {
  std::vector<std::string> placement;  // srun's options: where it runs
  std::string what;                    // for the error: "after task 7 ended"
};

// `srun --overlap --jobid` one node-check per node of a running task's allocation, as its
// owner; nullopt (the reason in `errors`) when the owner cannot be named.
std::optional<NodeCheckAsk> ask_in_job(const SlurmJob& task, std::vector<std::string>& errors);

// `srun <placement> llmwatch [--config PATH] node-check --json`, within `timeout`.
SrunNodeCheck node_check_by_srun(const Config& config, SlurmClient& slurm,
                                 std::vector<std::string> placement, const std::string& what,
                                 Seconds timeout);

// Several at once (at most kParallelNodeChecks in flight), each within what the cycle's remote
// budget grants it (#26.8: one after another, two checks on nodes whose nvidia-smi hangs took
// the cycle past its deadline). One the budget cannot fit is deferred, not run. The answers
// are in the order of `asks`.
inline constexpr int kParallelNodeChecks = 8;
std::vector<SrunNodeCheck> node_checks_by_srun(const Config& config, SlurmClient& slurm,
                                               const TimeBudget& budget,
                                               const std::vector<NodeCheckAsk>& asks);

}  // namespace llmwatch
