#include "probes/log_growth.h"

#include <sys/stat.h>

#include <algorithm>

#include "util/deadline_call.h"
#include "util/timespec.h"

namespace llmwatch {

double written_by(const GrowthSeries& series, std::uint64_t dev, std::uint64_t inode,
                  std::uint64_t end) {
  if (end == 0 || series.dev != dev || series.inode != inode) return 0;
  for (const auto& s : series.samples)
    if (s.size >= end) return s.mtime;
  return 0;
}

void LogGrowth::follow(std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  if (paths.size() > kMaxPaths) paths.resize(kMaxPaths);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = series_.begin(); it != series_.end();)
    it = std::binary_search(paths.begin(), paths.end(), it->first) ? std::next(it)
                                                                   : series_.erase(it);
  followed_ = std::move(paths);
}

void LogGrowth::observe(const std::string& path, std::uint64_t dev, std::uint64_t inode,
                        std::uint64_t size, double mtime) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!std::binary_search(followed_.begin(), followed_.end(), path)) return;
  GrowthSeries& s = series_[path];
  if (s.dev != dev || s.inode != inode || (!s.samples.empty() && size < s.samples.back().size))
    s = {dev, inode, {}};
  if (!s.samples.empty() && size == s.samples.back().size) return;  // no growth: nothing new
  s.samples.push_back({size, mtime});
  if (s.samples.size() > kMaxSamples) s.samples.pop_front();
}

void LogGrowth::sample(std::chrono::milliseconds limit) {
  std::vector<std::string> paths;
  {
    std::lock_guard<std::mutex> lock(mu_);
    paths = followed_;
  }
  if (paths.empty()) return;
  // Each look is kept as it is made: a round slower than `limit` (a loaded file server) keeps
  // what it saw, and a round stuck on a hung mount holds up only itself (the next one is refused
  // while it is stuck: util/deadline_call.h).
  call_with_deadline<bool>("log growth", limit, [this, paths = std::move(paths)] {
    for (const auto& path : paths) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      observe(path, static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
              static_cast<std::uint64_t>(st.st_size), seconds_of(st.st_mtim));
    }
    return true;
  });
}

GrowthSeries LogGrowth::series(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(path);
  return it == series_.end() ? GrowthSeries{} : it->second;
}

LogGrowth& log_growth() {
  static LogGrowth growth;
  return growth;
}

}  // namespace llmwatch
