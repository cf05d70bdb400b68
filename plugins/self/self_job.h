#pragma once
// One llmwatch job of the self-perpetuating chain, as sbatch is asked for it: the same name
// and --dependency=singleton (never two at once), starting after `delay` seconds, with the
// llmwatch binary and config it runs. Used by `submit`, by a self-job run that queues its
// successor first, and by the successor action that mends a chain.
#include <string>
#include <vector>

#include "config/config.h"

namespace llmwatch {

std::vector<std::string> self_job_args(const Config& config, const std::string& config_path,
                                       long delay_seconds);

}  // namespace llmwatch
