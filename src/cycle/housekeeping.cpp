#include "cycle/housekeeping.h"

#include <chrono>
#include <filesystem>

#include "action.h"
#include "store/store.h"
#include "util/units.h"

namespace llmwatch {
namespace fs = std::filesystem;

int clean_checkpoints(const StorageSettings& s, const CheckpointScan& scan, Store& store,
                      double now, bool dry_run) {
  int count = 0;
  for (const auto& c : cleanup_candidates(scan, s.keep_last)) {
    // The intent is journaled first; a key used once is never used again.
    std::string key = "cleanup:" + c.path + (dry_run ? ":dry-run" : "");
    auto id = store.begin_action(key, "cleanup", "storage:" + s.path,
                                 "keep_last " + std::to_string(std::max(2, s.keep_last)), now);
    if (!id) continue;
    ++count;
    std::string size = format_size(c.bytes);
    if (dry_run) {
      store.finish_action(*id, "dry-run", "would delete " + c.path + " (" + size + ")", now);
      store.add_event(now, "cleanup", "storage:" + s.path, "info",
                      "dry-run: would delete " + c.path + " (" + size + ")");
      continue;
    }
    std::error_code ec;
    fs::remove_all(c.path, ec);
    store.finish_action(*id, action_state_name(ec ? ActionState::Failed : ActionState::Done),
                        (ec ? "could not delete " : "deleted ") + c.path + " (" + size + ")" +
                            (ec ? ": " + ec.message() : ""),
                        now);
    store.add_event(
        now, "cleanup", "storage:" + s.path, ec ? "warning" : "info",
        (ec ? "could not delete " : "deleted old checkpoint ") + c.path + " (" + size + ")");
  }
  return count;
}

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
