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

// A task's copies, by its run_key(): the one written for a resubmission,
// <state_dir>/scripts/<task>-<start>.sh, and the one kept while it ran
// (cycle/checks/script_keeper.h), in kept_scripts_dir.
std::string resubmitted_copy_path(const std::string& state_dir, const std::string& run_key);
std::string kept_scripts_dir(const std::string& state_dir);
std::string kept_script_path(const std::string& state_dir, const std::string& run_key);

// Writes `text` to `path` (one of the paths above) byte for byte, 0600 in 0700 directories: it
// holds what its owner wrote (sbatch, run as root with --uid, reads it).
Status write_script_copy(const std::string& state_dir, const std::string& path,
                         const std::string& text);

}  // namespace llmwatch
