#include "store/kept_script.h"

#include "store/keys.h"
#include "store/store.h"

namespace llmwatch {

// The row is the task's key, a newline, then "ok" or the error.
std::optional<KeptScript> read_kept_script(Store& store, const std::string& job) {
  auto row = store.get(kv::kept_script(job));
  if (!row) return std::nullopt;
  const auto end = row->find('\n');
  if (end == std::string::npos || end == 0) return std::nullopt;
  KeptScript k{row->substr(0, end), row->substr(end + 1)};
  if (k.error == "ok")
    k.error.clear();
  else if (k.error.empty())
    k.error = "unknown";
  return k;
}

void put_kept_script(Store& store, const std::string& job, const KeptScript& k, double now) {
  std::string error = k.error;  // one line
  for (char& c : error)
    if (c == '\n' || c == '\r') c = ' ';
  store.put(kv::kept_script(job), k.task + "\n" + (error.empty() ? "ok" : error), now);
}

}  // namespace llmwatch
