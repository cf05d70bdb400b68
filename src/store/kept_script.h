#pragma once
// Which task's batch script llmwatch keeps for a run with no script file of its own (sbatch
// --wrap, or a script on sbatch's stdin), as Slurm had it when llmwatch first saw the task run
// (kv script:<job>). Slurm forgets its copy MinJobAge after the task ends; a restart that comes
// later (a daemon restarted, a self job that ran late, a restart that waited) resubmits this
// one. The script itself is a file (slurm/script_file.h), 0600 like Slurm's spool: it holds
// what its owner wrote, which the store, read by `status`, must not.
#include <optional>
#include <string>

namespace llmwatch {

class Store;

struct KeptScript {
  std::string task;   // the task's run_key() ("7@1700000000"): a requeued id is another run
  std::string error;  // why Slurm's copy could not be had, when it could not: not asked again
};

// nullopt when none is kept or the row is not one.
std::optional<KeptScript> read_kept_script(Store& store, const std::string& job);
void put_kept_script(Store& store, const std::string& job, const KeptScript& k, double now);

}  // namespace llmwatch
