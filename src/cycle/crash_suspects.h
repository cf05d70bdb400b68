#pragma once
// The nodes a restart avoids. A task's crash suspects: the nodes its crash lines blame
// (rules/attribution.h), with what the cycle knows of its nodes: the NodeAddr this cycle's sinfo
// gave for the peer an NCCL error names (no RPC), and the task's troubles (Slurm's state, a
// node-check's CRITICAL). And the suspicion ledger's repeat offenders, which every restart
// avoids. Shared by the job-log check (whether a crash needs a node-check before its restart,
// and what a restart queued behind its task must be kept off since) and the act phase (what
// the restart avoids).
#include <vector>

#include "cycle/cycle_state.h"
#include "rules/attribution.h"

namespace llmwatch {

// The running task's, else the last one's; none without a task.
std::vector<Suspect> crash_suspects(const CycleState& s, const JobWork& w);

// Nodes with 2 or more incidents within lemon_window, at most lemon_failures (none when the
// lemon rule is off): each restart stays off them (#30: a hung run was restarted onto one)
// while they wait for the lemon drain.
std::vector<Suspect> ledger_suspects(const CycleState& s);
// The ledger's repeat offenders now that were not at `since` (incidents charged after it):
// what a restart queued then was not weighed against.
std::vector<std::string> ledger_suspects_since(const CycleState& s, double since);

}  // namespace llmwatch
