#pragma once
// The goodput ledger's look at one watched job, once per cycle (#29): what the cycle saw of it
// (the running task, its steps, a save, a hang or slowdown finding, an end and its suspect)
// becomes a GoodputLook; the charges go to the ledger, the state to the store.
#include "cycle/cycle_state.h"

namespace llmwatch {

void record_goodput(CycleState& s, const JobWork& w);

}  // namespace llmwatch
