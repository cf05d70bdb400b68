#include "cycle/housekeeping.h"

#include <chrono>
#include <filesystem>

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

}  // namespace llmwatch
