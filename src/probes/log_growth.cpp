#include "probes/log_growth.h"

#include <sys/stat.h>

#include <algorithm>

#include "util/deadline_call.h"

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
  struct Look {
    std::string path;
    struct stat st;
  };
  auto looked =
      call_with_deadline<std::vector<Look>>("log growth", limit, [paths = std::move(paths)] {
        std::vector<Look> out;
        for (const auto& path : paths) {
          Look l{path, {}};
          if (::stat(path.c_str(), &l.st) == 0 && S_ISREG(l.st.st_mode)) out.push_back(l);
        }
        return out;
      });
  if (!looked.ok()) return;  // a hung mount: the next round tries again
  for (const auto& l : *looked.value)
    observe(
        l.path, static_cast<std::uint64_t>(l.st.st_dev), static_cast<std::uint64_t>(l.st.st_ino),
        static_cast<std::uint64_t>(l.st.st_size),
        static_cast<double>(l.st.st_mtim.tv_sec) + static_cast<double>(l.st.st_mtim.tv_nsec) / 1e9);
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
