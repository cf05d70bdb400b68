#pragma once
// The batch script a restart resubmits. Most jobs name a script file (Slurm's Command). A job
// submitted with `sbatch --wrap`, or with its script on sbatch's stdin, has none
// (Command=(null) in scontrol, "" in squeue --json): its resubmission used to fail with
// sbatch's "Unable to open file (null)". Slurm keeps such a job's script while it knows the
// job (MinJobAge after its end), and the cycle that first saw the task run kept it too
// (cycle/checks/script_keeper.h): a restart resubmits a copy of that, or of Slurm's.
#include <string>

#include "action.h"
#include "util/result.h"

namespace llmwatch {

// What to hand sbatch. `copy` is set when `path` is a copy of Slurm's that llmwatch wrote:
// sbatch sends the script's text to slurmctld, so the caller removes the copy once sbatch
// has taken it (a kept one stays while sbatch fails: the next try needs it). The run resubmitted
// from it then names a file that is gone, so it is treated as one with no script file: its own
// copy is kept while it runs, and its restart takes that (or Slurm's) in turn.
struct ScriptToResubmit {
  std::string path;
  bool copy = false;
  bool kept = false;  // the copy is the one kept while the task ran (Slurm's may be gone)
};

// The script to resubmit `t` of [[job]] `job` with: its own script file, or a copy of Slurm's
// (the one kept while it ran, else Slurm's now) written to <state_dir>/scripts/<task>-<start>.sh
// (0600: it holds what its owner wrote; sbatch, run as root with --uid, reads it). Why not,
// when none can be had.
Result<ScriptToResubmit> script_to_resubmit(const SlurmJob& t, const std::string& job,
                                            ActionContext& ctx);

}  // namespace llmwatch
