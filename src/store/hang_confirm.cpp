#include "store/hang_confirm.h"

#include <nlohmann/json.hpp>

#include "store/keys.h"
#include "store/store.h"
#include "util/text.h"

namespace llmwatch {

std::optional<PendingConfirm> read_hang_confirm(Store& store, const std::string& job) {
  auto j = nlohmann::json::parse(store.get(kv::hang_confirm(job)).value_or(""), nullptr, false);
  if (!j.is_object() || !j["ts"].is_number() || !j["dump"].is_string()) return std::nullopt;
  return PendingConfirm{j.value("task", ""), j["dump"].get<std::string>(), j["ts"].get<double>(),
                        j.value("by_look", false)};
}

void put_hang_confirm(Store& store, const std::string& job, const PendingConfirm& p, double now) {
  store.put(kv::hang_confirm(job),
            json_dump({{"task", p.task},
                       {"ts", p.ts},
                       {"dump", truncate_utf8(valid_utf8(p.dump), 1 << 20)},
                       {"by_look", p.by_look}}),
            now);
}

void clear_hang_confirm(Store& store, const std::string& job, double now) {
  store.put(kv::hang_confirm(job), "", now);
}

}  // namespace llmwatch
