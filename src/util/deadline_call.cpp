#include "util/deadline_call.h"

#include <map>
#include <mutex>

namespace llmwatch::deadline_detail {
namespace {

std::mutex outstanding_mutex;
std::map<std::string, std::chrono::steady_clock::time_point> outstanding;

}  // namespace

bool claim(const std::string& key, long* stuck_for) {
  std::lock_guard lock(outstanding_mutex);
  auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = outstanding.emplace(key, now);
  if (!fresh && stuck_for)
    *stuck_for = std::chrono::duration_cast<std::chrono::seconds>(now - it->second).count();
  return fresh;
}

void release(const std::string& key) {
  std::lock_guard lock(outstanding_mutex);
  outstanding.erase(key);
}

}  // namespace llmwatch::deadline_detail
