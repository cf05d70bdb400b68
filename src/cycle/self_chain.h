#pragma once
// The self-perpetuating llmwatch job: each run makes sure exactly one successor is queued
// (--begin=now+INTERVAL, same name, --dependency=singleton), so the chain survives without
// cron. A chain that lost its successor is noticed by the next cycle, whoever runs it.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "self/self_job.h"
#include "slurm/slurm_client.h"

namespace llmwatch {

struct ChainCheck {
  std::vector<SlurmJob> mine;         // llmwatch jobs of this user, other than the current one
  std::optional<SlurmJob> successor;  // one of them, pending
  bool other_running = false;         // another llmwatch job is running right now
};

ChainCheck check_chain(const std::vector<SlurmJob>& queue, const Config& config,
                       const std::string& own_job_id, const std::string& user);

// In a self-job run, the first thing done: queue the successor, before the lease, squeue or
// any probe, which can fail or hang and would otherwise end the chain for good. A duplicate
// this may create is cancelled by the successor action (plugins/self/successor.cpp).
SubmitResult queue_successor_first(const Config& config, const std::string& config_path,
                                   long delay_seconds, SlurmClient& slurm);

}  // namespace llmwatch
