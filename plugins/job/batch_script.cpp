#include "job/batch_script.h"

#include <filesystem>

#include "slurm/script_file.h"
#include "store/kept_script.h"

namespace llmwatch {

Result<ScriptToResubmit> script_to_resubmit(const SlurmJob& t, const std::string& job,
                                            ActionContext& ctx) {
  if (names_own_script(t, ctx.config.state_dir)) return ScriptToResubmit{t.command};
  // The copy kept while this task ran: Slurm's own is gone MinJobAge after the task ended.
  auto kept = read_kept_script(ctx.store, job);
  const bool this_task = kept && kept->task == t.run_key();
  if (this_task && kept->error.empty()) {
    const std::string path = kept_script_path(ctx.config.state_dir, kept->task);
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return ScriptToResubmit{path, true, true};
  }
  auto text = ctx.slurm.batch_script(t.display_id());
  if (!text)
    return Error{t.display_id() + " has no batch script file (sbatch --wrap, or a script on " +
                 "sbatch's stdin), and Slurm's copy of it cannot be had: " + text.error() +
                 (this_task ? "; nor when it ran: " +
                                  (kept->error.empty() ? "its copy is gone" : kept->error)
                            : "; none was kept when it ran")};
  const std::string path = resubmitted_copy_path(ctx.config.state_dir, t.run_key());
  Status written = write_script_copy(ctx.config.state_dir, path, *text);
  if (!written) return Error{written.error()};
  return ScriptToResubmit{path, true};
}

}  // namespace llmwatch
