#include "slurm/hostlist_cache.h"

#include "slurm/hostlist.h"

namespace llmwatch {

const std::vector<std::string>& HostlistCache::hosts(const std::string& list) {
  if (auto it = known_.find(list); it != known_.end()) return it->second;
  if (known_.size() >= most_) known_.clear();
  return known_.emplace(list, hosts_in(list)).first->second;
}

}  // namespace llmwatch
