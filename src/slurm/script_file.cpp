#include "slurm/script_file.h"

#include <filesystem>

#include "util/files.h"

namespace llmwatch {
namespace {

// "7_3@1700000000" names "7_3-1700000000.sh".
std::string copy_name(const std::string& run_key) {
  return run_key_file_stem(run_key) + ".sh";
}

}  // namespace

std::string script_copies_dir(const std::string& state_dir) {
  return state_dir + "/scripts";
}

bool names_own_script(const SlurmJob& t, const std::string& state_dir) {
  if (t.command.empty() || t.command == "(null)") return false;
  return t.command.rfind(script_copies_dir(state_dir) + "/", 0) != 0;
}

std::string resubmitted_copy_path(const std::string& state_dir, const std::string& run_key) {
  return script_copies_dir(state_dir) + "/" + copy_name(run_key);
}

std::string kept_scripts_dir(const std::string& state_dir) {
  return script_copies_dir(state_dir) + "/kept";
}

std::string kept_script_path(const std::string& state_dir, const std::string& run_key) {
  return kept_scripts_dir(state_dir) + "/" + copy_name(run_key);
}

// Each directory is made private before the file is in it, so no other user can ever read the
// file, and no umask is changed: it is the process's, and other checks' threads write files
// while this runs.
Status write_script_copy(const std::string& state_dir, const std::string& path,
                         const std::string& text) {
  for (const std::string& dir :
       {script_copies_dir(state_dir), std::filesystem::path(path).parent_path().string()})
    if (Status made = make_private_dir(dir); !made) return made;
  return write_private_file(path, text);
}

}  // namespace llmwatch
