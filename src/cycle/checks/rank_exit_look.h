#pragma once
// #30: after a fatal line a rank may go on from (an NCCL error raised to Python), each running
// task is asked, on every node, whether the rank that printed it still has a process (srun
// --overlap as the job's owner: `llmwatch stacks --ranks`, which reads /proc). One seen gone, or
// there but exiting (its program ended; it lingers in a thread join or a destructor: gdb
// attaches to that one process, no other), makes the line one no rank goes on from
// (rules/rank_exit.h), as srun's "task 5: Exited" line would where srun's output is not in the
// log: the run then gets 8 s from the line, not two step intervals, before its hang is dumped,
// confirmed and restarted (10 s steps: ~20-30 s). Asked 4 s after the line, so that the answer
// is in before those 8 s run out, and once more at 8 s where the rank still ran.
#include "cycle/cycle_state.h"

namespace llmwatch {

// Every look due this cycle (rules/job_progress.h: rank_look_due), at once, under the cycle's
// remote budget; one that does not fit is tried next cycle, one that ran is not run again
// before the next is due. Its answer is an event either way.
void look_for_ended_ranks(CycleState& s);

}  // namespace llmwatch
