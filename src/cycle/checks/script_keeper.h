#pragma once
// Keeps the batch script of a watched run that has no script file (sbatch --wrap), from the
// cycle that first sees its task run: Slurm forgets its own copy MinJobAge after the task
// ends (60 s on the local cluster, 300 s by default), and a restart that came later failed
// and left the run waiting for a person.
#include <string>
#include <vector>

#include "cycle/cycle_state.h"

namespace llmwatch {

// At most this many of Slurm's copies are asked for a cycle: after a maintenance window many
// runs start at once, and each is an RPC to slurmctld (#25). The rest are asked next cycle.
inline constexpr int kScriptsAskedPerCycle = 8;

// For each job whose running task has no script file (and no error this cycle in `errors`,
// by job): Slurm's copy of its script, kept once a task (slurm/script_file.h's
// kept_script_path, named by the store's row: store/kept_script.h). A [[job]] keeps one: the
// copy of its earlier task goes.
void keep_scripts_of_wrapped_tasks(CycleState& s, const std::vector<std::string>& errors);

}  // namespace llmwatch
