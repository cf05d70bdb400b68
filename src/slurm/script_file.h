#pragma once
// Whether a task names a batch script file of its own: most do (Slurm's Command). One submitted
// with `sbatch --wrap`, or with its script on sbatch's stdin, has none (Command=(null) in
// scontrol, "" in squeue --json), and neither has a run llmwatch resubmitted from a copy of
// Slurm's: that copy is removed once sbatch has read it.
#include <string>

#include "slurm/slurm_job.h"
#include "util/result.h"

namespace llmwatch {

// Where llmwatch writes the copies of Slurm's scripts it resubmits.
std::string script_copies_dir(const std::string& state_dir);

bool names_own_script(const SlurmJob& t, const std::string& state_dir);

// The copy of a task's script kept while it ran (cycle/checks/script_keeper.h), by its
// run_key(): <state_dir>/scripts/kept/<task>-<start>.sh.
std::string kept_script_path(const std::string& state_dir, const std::string& run_key);

// Writes `text` to `path` byte for byte, 0600 in a 0700 directory: it holds what its owner
// wrote (sbatch, run as root with --uid, reads it).
Status write_script_copy(const std::string& path, const std::string& text);

}  // namespace llmwatch
