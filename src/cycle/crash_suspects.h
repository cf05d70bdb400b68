#pragma once
// The nodes a task's crash lines blame (rules/attribution.h), with what the cycle knows of its
// nodes: the NodeAddr this cycle's sinfo gave for the peer an NCCL error names (no RPC), and
// the task's troubles (Slurm's state, a node-check's CRITICAL). Shared by the job-log check
// (whether a crash needs a node-check before its restart) and the act phase (what the restart
// avoids).
#include <vector>

#include "cycle/cycle_state.h"
#include "rules/attribution.h"

namespace llmwatch {

// The running task's, else the last one's; none without a task.
std::vector<Suspect> crash_suspects(const CycleState& s, const JobWork& w);

}  // namespace llmwatch
