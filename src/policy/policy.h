#pragma once
// The policy: which actions a finding calls for. Pure: no I/O, so every decision can be
// tested. Dry-run, rate limits and idempotency are the executor's job (cycle/executor).
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/finding.h"

namespace llmwatch {

// The [[job]] on_* list that applies to a finding kind; empty for kinds with no job actions.
std::vector<std::string> actions_for(const Finding& f, const JobSettings& job);

// While a job is in a crash loop, restarting it only burns allocations: drop "restart" and
// "relaunch" from every plan of that job.
void suppress_restarts_in_crash_loop(const std::vector<Finding>& job_findings,
                                     std::vector<std::string>& plan);

// Findings that come from a probe that could not look (severity Unknown) may only alert:
// a failing probe must never cancel, restart or drain anything by itself.
bool action_allowed_on(const Finding& f, const std::string& action);

}  // namespace llmwatch
