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
  if (kept && kept->task == t.run_key() && kept->error.empty()) {
    const std::string path = kept_script_path(ctx.config.state_dir, kept->task);
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return ScriptToResubmit{path, true, true};
  }
  auto text = ctx.slurm.batch_script(t.display_id());
  if (!text)
    return Error{
        t.display_id() + " has no batch script file (sbatch --wrap, or a script on " +
        "sbatch's stdin), and Slurm's copy of it cannot be had: " + text.error() +
        (kept && kept->task == t.run_key()
             ? "; nor when it ran: " + (kept->error.empty() ? "its copy is gone" : kept->error)
             : "; none was kept when it ran")};
  // A task id is digits and one '_' ("7_3"): a file name as it is.
  const std::string path = script_copies_dir(ctx.config.state_dir) + "/" + t.display_id() + "-" +
                           std::to_string(t.start_time) + ".sh";
  Status written = write_script_copy(path, *text);
  if (!written) return Error{written.error()};
  return ScriptToResubmit{path, true};
}

}  // namespace llmwatch
