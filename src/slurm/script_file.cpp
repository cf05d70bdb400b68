#include "slurm/script_file.h"

#include <sys/stat.h>

#include <filesystem>

#include "util/files.h"

namespace llmwatch {

std::string script_copies_dir(const std::string& state_dir) {
  return state_dir + "/scripts";
}

bool names_own_script(const SlurmJob& t, const std::string& state_dir) {
  if (t.command.empty() || t.command == "(null)") return false;
  return t.command.rfind(script_copies_dir(state_dir) + "/", 0) != 0;
}

std::string kept_script_path(const std::string& state_dir, const std::string& run_key) {
  // A run key is a task id (digits and one '_') and its start: "7_3@1700000000".
  std::string name = run_key;
  for (char& c : name)
    if (c == '@') c = '-';
  return script_copies_dir(state_dir) + "/kept/" + name + ".sh";
}

Status write_script_copy(const std::string& path, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot make " + dir.string() + ": " + ec.message()};
  ::chmod(dir.c_str(), 0700);
  if (dir.filename() == "kept") ::chmod(dir.parent_path().c_str(), 0700);  // scripts/ too
  const mode_t before = ::umask(077);
  Status written = write_file_atomic(path, text);
  ::umask(before);
  return written;
}

}  // namespace llmwatch
