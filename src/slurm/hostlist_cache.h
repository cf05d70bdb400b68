#pragma once
// The hosts of hostlists expanded before, for a list read again every cycle (a running task's
// nodes, unchanged for as long as it runs): at 1,000 watched jobs of 64 nodes, expanding every
// task's list every cycle was a fifth of the cycle's instructions (llmwatch_bench --ranks 0
// --job-nodes 64, callgrind). Not shared between threads: each holds its own.
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace llmwatch {

class HostlistCache {
 public:
  explicit HostlistCache(std::size_t most = 4096) : most_(most) {}
  // hosts_in(list): none for a malformed list. Valid until the next call, which may forget it
  // (past `most` lists, all are forgotten: lists come and go with tasks).
  const std::vector<std::string>& hosts(const std::string& list);
  std::size_t size() const { return known_.size(); }

 private:
  std::size_t most_;
  std::unordered_map<std::string, std::vector<std::string>> known_;
};

}  // namespace llmwatch
