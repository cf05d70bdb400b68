#include "cycle/housekeeping.h"

#include <chrono>
#include <filesystem>

#include "slurm/script_file.h"
#include "store/kept_script.h"
#include "util/units.h"

namespace llmwatch {
namespace fs = std::filesystem;

int remove_old_own_logs(const std::string& state_dir, Seconds max_age, double now) {
  int count = 0;
  std::error_code ec;
  for (fs::directory_iterator it(state_dir + "/logs", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() != ".out") continue;
    auto t = std::chrono::file_clock::to_sys(fs::last_write_time(it->path(), ec));
    double mtime = std::chrono::duration<double>(t.time_since_epoch()).count();
    if (!ec && now - mtime > static_cast<double>(max_age.count()) && fs::remove(it->path(), ec))
      ++count;
  }
  return count;
}

int remove_unnamed_kept_scripts(const std::string& state_dir, Store& store,
                                const std::set<std::string>& labels) {
  const fs::path dir = kept_scripts_dir(state_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::set<fs::path> named;  // by file name: state_dir's spelling ("a//b", "a/") is not compared
  for (const auto& label : labels)
    if (auto kept = read_kept_script(store, label); kept && kept->error.empty())
      named.insert(fs::path(kept_script_path(state_dir, kept->task)).filename());
  int count = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code gone;
    if (!named.count(it->path().filename()) && fs::remove(it->path(), gone)) ++count;
  }
  return count;
}

}  // namespace llmwatch
