#include "config/action_catalogue.h"

#include <algorithm>
#include <mutex>

namespace llmwatch {
namespace {

// A function-local static: plugins register during static initialisation, in any order.
std::vector<ActionInfo>& entries() {
  static std::vector<ActionInfo> all;
  return all;
}
std::mutex& entries_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void add_action_info(ActionInfo info) {
  std::lock_guard lock(entries_mutex());
  auto& all = entries();
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const ActionInfo& a) { return a.name == info.name; }),
            all.end());
  all.push_back(std::move(info));
  std::sort(all.begin(), all.end(),
            [](const ActionInfo& a, const ActionInfo& b) { return a.name < b.name; });
}

std::vector<ActionInfo> action_catalogue() {
  std::lock_guard lock(entries_mutex());
  return entries();
}

std::vector<std::string> action_names_for(ActionTarget target) {
  std::vector<std::string> out;
  for (const auto& a : action_catalogue())
    if (a.target == target) out.push_back(a.name);
  return out;
}

}  // namespace llmwatch
