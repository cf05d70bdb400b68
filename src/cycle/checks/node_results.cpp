#include "cycle/checks/node_results.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "util/file_key.h"
#include "util/files.h"

namespace llmwatch {

// Every managed node's result is looked at every cycle, and most were not rewritten since the
// last: a result whose file is as it was is not read or parsed again (a report of 8 GPUs took
// 36 us to parse, 0.6 s a cycle at 16,384 nodes). node-check writes it by rename.
std::optional<NodeReport> read_node_result(const std::string& dir, const std::string& node,
                                           std::chrono::nanoseconds settle) {
  struct Kept {
    FileKey file;
    NodeReport report;
  };
  static std::mutex mu;
  static std::unordered_map<std::string, Kept> kept;
  const std::string path = dir + "/" + node + ".json";
  auto before = file_key(path);
  if (!before) return std::nullopt;
  // File times are coarse (a few ms): a file written in the last 2 s may have been rewritten
  // with the same size and time, on a freed inode. It is read again.
  const long long now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  const bool settled = now_ns - std::max(before->mtime_ns, before->ctime_ns) >= settle.count();
  if (settled) {
    std::lock_guard lock(mu);
    if (auto k = kept.find(path); k != kept.end() && k->second.file == *before)
      return k->second.report;
  }
  auto text = read_text_file(path);
  if (!text) return std::nullopt;
  auto report = NodeReport::from_json(*text);
  if (!report) return std::nullopt;
  // Kept only if the file did not change while it was read: else the next look reads it again.
  if (settled && file_key(path) == before) {
    std::lock_guard lock(mu);
    if (kept.size() >= 65536) kept.clear();
    kept[path] = {*before, report.value()};
  }
  return std::move(report).value();
}

}  // namespace llmwatch
