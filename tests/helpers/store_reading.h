#pragma once
// What cycle and phase tests read back from a Store: whether a finding fires, and the history
// as "kind: message" lines (for assertions and their failure messages).
#include <string>

#include "store/store.h"

namespace llmwatch::testing {

inline bool is_firing(Store& store, const std::string& key) {
  for (const auto& r : store.firing())
    if (r.key == key) return true;
  return false;
}

inline std::string event_lines(Store& store) {
  std::string out;
  for (const auto& e : store.events(0, "%", 1000)) out += e.kind + ": " + e.message + "\n";
  return out;
}

}  // namespace llmwatch::testing
