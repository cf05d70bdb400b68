#pragma once
// Training-health findings from a run's own series: slowdown against its median step
// time, loss spikes against its moving median, NaN/inf loss or rising skipped/NaN
// iteration counters, and consumed samples that stop moving while steps advance.
#include <vector>

#include "config/config.h"
#include "rules/finding.h"
#include "rules/job_progress.h"

namespace llmwatch {

// `label` is the job's label for keys ("job:<label>/slowdown").
std::vector<Finding> evaluate_training(const JobSettings& job, const std::string& label,
                                       const JobProgress& p);

}  // namespace llmwatch
