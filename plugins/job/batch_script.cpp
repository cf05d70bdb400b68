#include "job/batch_script.h"

#include <sys/stat.h>

#include <filesystem>

#include "util/files.h"

namespace llmwatch {

Result<std::string> script_to_resubmit(const SlurmJob& t, ActionContext& ctx) {
  if (!t.command.empty() && t.command != "(null)") return t.command;
  auto text = ctx.slurm.batch_script(t.display_id());
  if (!text)
    return Error{t.display_id() + " has no batch script file (sbatch --wrap, or a script on " +
                 "sbatch's stdin), and Slurm's copy of it cannot be had: " + text.error()};
  const std::string dir = ctx.config.state_dir + "/scripts";
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
  return path;
}

}  // namespace llmwatch
