#include "store/kv_memo.h"

namespace llmwatch {

const std::optional<std::string>* KvMemo::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

void KvMemo::remember(const std::string& key, std::optional<std::string> value) {
  if (value && value->size() > kMaxValue) {
    values_.erase(key);  // an older, smaller value must not stay behind
    return;
  }
  if (auto it = values_.find(key); it != values_.end())
    it->second = std::move(value);
  else
    values_.emplace(key, std::move(value));
}

void KvMemo::forget_all() {
  values_.clear();
}

bool KvMemo::check(std::int64_t data_version) {
  const bool changed = data_version != version_;
  if (changed) values_.clear();
  version_ = data_version;
  return changed;
}

}  // namespace llmwatch
