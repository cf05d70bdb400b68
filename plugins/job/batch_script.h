#pragma once
// The batch script a restart resubmits. Most jobs name a script file (Slurm's Command). A job
// submitted with `sbatch --wrap`, or with its script on sbatch's stdin, has none
// (Command=(null) in scontrol, "" in squeue --json): its resubmission used to fail with
// sbatch's "Unable to open file (null)". Slurm keeps such a job's script while it knows the
// job (MinJobAge after its end), so a restart asks for it and resubmits a copy.
#include <string>

#include "action.h"
#include "util/result.h"

namespace llmwatch {

// The path to resubmit `t` with: its own script, or Slurm's copy of it written to
// <state_dir>/scripts/<task>-<start>.sh (0600: it holds what its owner wrote; sbatch, run as
// root with --uid, reads it). Why not, when neither can be had.
Result<std::string> script_to_resubmit(const SlurmJob& t, ActionContext& ctx);

}  // namespace llmwatch
