#include "probes/checkpoints.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace llmwatch {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxFilesPerScan = 200000;  // a checkpoint tree can be huge: bound the walk

double mtime_of(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
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
    c.mtime = mtime_of(it->path());
    if (it->is_directory(ec)) {
      for (fs::recursive_directory_iterator
               f(it->path(), fs::directory_options::skip_permission_denied, ec),
           fend;
           f != fend && visited < kMaxFilesPerScan; f.increment(ec)) {
        if (ec) break;
        ++visited;
        if (f->is_regular_file(ec)) {
          c.bytes += f->file_size(ec);
          c.mtime = std::max(c.mtime, mtime_of(f->path()));
        }
      }
    } else if (it->is_regular_file(ec)) {
      c.bytes = it->file_size(ec);
    }
    c.complete = !being_written(name) && now - c.mtime > settle;
    scan.checkpoints.push_back(c);
  }
  std::sort(scan.checkpoints.begin(), scan.checkpoints.end(),
            [](const Checkpoint& a, const Checkpoint& b) { return a.mtime < b.mtime; });
  return scan;
}

std::vector<Checkpoint> cleanup_candidates(const CheckpointScan& scan, int keep_last) {
  if (keep_last <= 0) return {};
  int keep = std::max(2, keep_last);
  std::vector<Checkpoint> complete;
  for (const auto& c : scan.checkpoints)
    if (c.complete) complete.push_back(c);
  if (static_cast<int>(complete.size()) <= keep) return {};
  return {complete.begin(), complete.end() - keep};
}

}  // namespace llmwatch
