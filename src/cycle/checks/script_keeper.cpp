#include "cycle/checks/script_keeper.h"

#include <filesystem>

#include "slurm/script_file.h"
#include "store/kept_script.h"
#include "store/store.h"

namespace llmwatch {

void keep_scripts_of_wrapped_tasks(CycleState& s, const std::vector<std::string>& errors) {
  int asked = 0;
  for (size_t i = 0; i < s.work.size(); ++i) {
    const JobWork& w = s.work[i];
    if (!w.obs.running || !errors[i].empty()) continue;
    const SlurmJob& task = *w.obs.running;
    // Its command is unknown until squeue's details of a new task came: asked next cycle.
    if (task.command.empty() || names_own_script(task, s.config.state_dir)) continue;
    // Kept already (or it could not be had): the store's row says, a read a --wrap job a cycle.
    auto before = read_kept_script(s.store, w.label);
    if (before && before->task == task.run_key()) continue;
    if (asked == kScriptsAskedPerCycle) continue;
    ++asked;
    KeptScript k{task.run_key(), ""};
    auto text = s.slurm.batch_script(task.display_id());
    Status written = text ? write_script_copy(s.config.state_dir,
                                              kept_script_path(s.config.state_dir, k.task), *text)
                          : Status{Error{text.error()}};
    if (!written) k.error = written.error();
    put_kept_script(s.store, w.label, k, s.now);
    // One copy a [[job]]: the run's earlier task is not restarted once a later one runs.
    std::error_code ignored;
    if (before)
      std::filesystem::remove(kept_script_path(s.config.state_dir, before->task), ignored);
  }
}

}  // namespace llmwatch
