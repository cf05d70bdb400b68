#include "job/batch_script.h"

#include <sys/stat.h>

#include <filesystem>

#include "util/files.h"

namespace llmwatch {

Result<ScriptToResubmit> script_to_resubmit(const SlurmJob& t, ActionContext& ctx) {
  const std::string dir = ctx.config.state_dir + "/scripts";
  // A run resubmitted from a copy names that copy, removed once sbatch read it: it has no
  // script file either.
  const bool ours = t.command.rfind(dir + "/", 0) == 0;
  if (!t.command.empty() && t.command != "(null)" && !ours)
    return ScriptToResubmit{t.command, false};
  auto text = ctx.slurm.batch_script(t.display_id());
  if (!text)
    return Error{t.display_id() + " has no batch script file (sbatch --wrap, or a script on " +
                 "sbatch's stdin), and Slurm's copy of it cannot be had: " + text.error()};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot make " + dir + ": " + ec.message()};
  ::chmod(dir.c_str(), 0700);
  // A task id is digits and one '_' ("7_3"): a file name as it is.
  const std::string path = dir + "/" + t.display_id() + "-" + std::to_string(t.start_time) + ".sh";
  const mode_t before = ::umask(077);
  Status written = write_file_atomic(path, *text);
  ::umask(before);
  if (!written) return Error{written.error()};
  return ScriptToResubmit{path, true};
}

}  // namespace llmwatch
