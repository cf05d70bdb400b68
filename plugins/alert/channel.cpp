#include "alert/channel.h"

#include <map>
#include <mutex>

namespace llmwatch {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, DeliverBatch> by_type;
};
// Function-local: registration from any file's static initialiser finds it constructed.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

DeliverBatch grouped(DeliverOne one) {
  return [one = std::move(one)](const AlertChannel& channel,
                                const std::vector<AlertMessage>& messages) {
    return one(channel, group_messages(messages));
  };
}

bool register_channel(ChannelInfo info, DeliverBatch deliver) {
  auto& r = registry();
  {
    std::lock_guard lock(r.mutex);
    r.by_type[info.type] = std::move(deliver);
  }
  add_channel_info(std::move(info));
  return true;
}

const DeliverBatch* find_channel(const std::string& type) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_type.find(type);
  // Entries are never removed once registered, so the pointer outlives the lock.
  return it == r.by_type.end() ? nullptr : &it->second;
}

}  // namespace llmwatch
