#pragma once
// Which files a watched job logs to.
#include <string>
#include <vector>

#include "config/config.h"
#include "slurm/slurm_job.h"

namespace llmwatch {

// The [[job]] logs (Slurm patterns expanded, then globbed, for per-rank logs), sorted; or
// the task's StdOut when none are configured. A plain path that does not exist yet is kept
// (reading it reports that); a glob that matches nothing contributes nothing.
std::vector<std::string> log_paths_for(const JobSettings& job, const SlurmJob& task);
// The two halves of log_paths_for: the patterns expanded for the task (no file-system
// access), then globbed (the part that may hang on a dead mount).
std::vector<std::string> log_patterns_for(const JobSettings& job, const SlurmJob& task);
std::vector<std::string> glob_logs(const std::vector<std::string>& patterns);

}  // namespace llmwatch
