#include "util/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace llmwatch {
namespace fs = std::filesystem;

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("llmwatch") : p.string();
}

std::string data_dir() {
  if (const char* env = std::getenv("LLMWATCH_DATADIR"); env && *env) return env;
  std::error_code ec;
  fs::path installed = fs::path(self_exe()).parent_path().parent_path() / "share" / "llmwatch";
  if (fs::exists(installed / "slurm", ec)) return installed.string();
  if (fs::exists(fs::path(LLMWATCH_DATADIR) / "slurm", ec)) return LLMWATCH_DATADIR;
  return LLMWATCH_SOURCE_DIR;
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

}  // namespace llmwatch
