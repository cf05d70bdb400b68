#pragma once
// What this connection last read or wrote of the kv table, so that a cycle's thousands of
// reads and unchanged writes (every watched job's last task, view, near miss and progress)
// cost no SQL. It is used only where it is known to be true: inside a transaction that began
// with no other connection having committed since the memo was last checked (PRAGMA
// data_version says so, one query per transaction). Another writer (the CLI, a second
// instance) or a rollback empties it; forgetting is always safe.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace llmwatch {

class KvMemo {
 public:
  // Larger values (the heartbeat, a progress's cold part) are read rarely and would cost
  // memory for every job: they are not kept.
  static constexpr std::size_t kMaxValue = 1024;

  // The value known for key (nullopt inside: known to be absent), or null when not known.
  const std::optional<std::string>* find(const std::string& key) const;
  void remember(const std::string& key, std::optional<std::string> value);
  void forget_all();
  // Empties the memo when another connection committed since the last check; says whether it
  // did (what else is kept beside it is then forgotten too).
  bool check(std::int64_t data_version);

 private:
  std::unordered_map<std::string, std::optional<std::string>> values_;
  std::int64_t version_ = -1;
};

}  // namespace llmwatch
