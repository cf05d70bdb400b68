#pragma once
// The phases of a cycle after the checks (check.h) observed and judged. The supervisor
// only sequences them; each is its own failure domain, and the finish phase always runs.
//   checks → act (record findings, decide, act) → record → notify → finish
#include "cycle/cycle_state.h"

namespace llmwatch {

// Records this cycle's findings (new ones become events), then runs the plan the policy
// chooses for each, through the executor (journal, dry-run, budgets), node plans first.
void act_phase(CycleState& state);
// Resolves what cleared and keeps what the next cycle needs: progress, last runs, views.
void record_phase(CycleState& state);
// Repeats what keeps firing, then sends every alert due (this cycle's and retries).
void notify_phase(CycleState& state);
// The cycle record and heartbeat, housekeeping, the metrics file, the dead-man ping.
void finish_phase(CycleState& state);

}  // namespace llmwatch
