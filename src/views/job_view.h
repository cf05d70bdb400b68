#pragma once
// One watched run in numbers: the derived training figures (tokens/s, MFU, ETA, ...) and its
// history across restarts (time lost per restart, effective training time ratio,
// checkpoint-interval advice). Read-only, like every view.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/job_progress.h"

namespace llmwatch {

class Store;

// Figures from the progress and the [[job]]'s model facts; absent keys could not be derived.
nlohmann::json job_figures(const JobSettings& job, const JobProgress& p, double now);
// Restarts, lost time, effective training time ratio and checkpoint advice from the store.
// `series`: also the steps over time (the job view); metrics, every cycle, go without.
nlohmann::json job_history(const JobSettings& job, Store& store, double now, bool series = true);
// "▁▂▄█": recent step times at a glance.
std::string sparkline(const std::vector<double>& values, size_t width = 20);
std::string render_job(const nlohmann::json& job, bool color);
// Everything `llmwatch job JOB --json` prints (schema "llmwatch.job/1").
nlohmann::json build_job(const JobSettings& job, Store& store, double now);

}  // namespace llmwatch
