#include "probes/checkpoints.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

namespace llmwatch {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxFilesPerScan = 200000;  // a checkpoint tree can be huge: bound the walk

// nullopt when it cannot be read: a failed read must never pass for "very old".
std::optional<double> mtime_of(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  if (ec) return std::nullopt;
  auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration<double>(sys.time_since_epoch()).count();
}

bool being_written(const std::string& name) {
  for (const char* suffix : {".tmp", "-unfinished", ".partial", ".incomplete"})
    if (name.size() >= std::strlen(suffix) &&
        name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      return true;
  return false;
}

}  // namespace

CheckpointScan scan_checkpoints(const std::string& dir, const std::string& glob, double now,
                                double settle) {
  CheckpointScan scan;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return scan.error = dir + ": " + ec.message(), scan;
  std::size_t visited = 0;
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    std::string name = it->path().filename().string();
    if (fnmatch(glob.c_str(), name.c_str(), 0) != 0) continue;
    Checkpoint c;
    c.path = it->path().string();
    auto top = mtime_of(it->path());
    c.mtime = top.value_or(0);
    c.mtime_known = top.has_value();
    if (it->is_directory(ec)) {
      for (fs::recursive_directory_iterator
               f(it->path(), fs::directory_options::skip_permission_denied, ec),
           fend;
           f != fend && visited < kMaxFilesPerScan; f.increment(ec)) {
        if (ec) break;
        ++visited;
        if (f->is_regular_file(ec)) {
          c.bytes += f->file_size(ec);
          auto m = mtime_of(f->path());
          c.mtime = std::max(c.mtime, m.value_or(0));
          c.mtime_known &= m.has_value();
        }
      }
    } else if (it->is_regular_file(ec)) {
      c.bytes = it->file_size(ec);
    }
    c.complete = c.mtime_known && !being_written(name) && now - c.mtime > settle;
    scan.checkpoints.push_back(c);
  }
  std::sort(scan.checkpoints.begin(), scan.checkpoints.end(),
            [](const Checkpoint& a, const Checkpoint& b) { return a.mtime < b.mtime; });
  return scan;
}

std::vector<Checkpoint> cleanup_candidates(const CheckpointScan& scan, int keep_last) {
  if (keep_last <= 0) return {};
  int keep = std::max(2, keep_last);
  // One unreadable modification time and "oldest" is a guess: the newest could be deleted.
  for (const auto& c : scan.checkpoints)
    if (!c.mtime_known) return {};
  std::vector<Checkpoint> complete;
  for (const auto& c : scan.checkpoints)
    if (c.complete) complete.push_back(c);
  if (static_cast<int>(complete.size()) <= keep) return {};
  return {complete.begin(), complete.end() - keep};
}

}  // namespace llmwatch
