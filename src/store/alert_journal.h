#pragma once
// The alert side of the store: the delivery journal (nothing lost across restarts, retried
// with backoff) and silences.
#include <cstdint>
#include <string>
#include <vector>

#include "store/store.h"

namespace llmwatch {

struct DeliveryRow {
  std::int64_t id = 0;
  std::string channel, alert_key, message_json, state, last_error;
  int attempts = 0;
  double next_attempt = 0, created = 0, sent_at = 0;
};

struct SilenceRow {
  std::int64_t id = 0;
  std::string pattern, reason, created_by;
  double until = 0, created = 0;
};

class AlertJournal {
 public:
  explicit AlertJournal(Store& store) : db_(store.db()) {}

  void enqueue(const std::string& channel, const std::string& alert_key,
               const std::string& message_json, double now);
  // Pending deliveries due now, oldest first.
  std::vector<DeliveryRow> due(double now);
  void mark_sent(std::int64_t id, double now);
  // Exponential backoff: base, 2×base, 4×base, ... capped at 1 h.
  void mark_failed(std::int64_t id, const std::string& error, double now, double base_seconds = 30);
  int pending_count();
  // Failed delivery attempts per channel (attempts of sent rows, less the one that went through).
  std::map<std::string, std::int64_t> failed_attempts();
  int sent_count(const std::string& alert_key);

  std::int64_t add_silence(const std::string& pattern, double until, const std::string& reason,
                           const std::string& by, double now);
  bool remove_silence(std::int64_t id);
  std::vector<SilenceRow> silences(double now);  // active ones
  // The active silence that covers `key` (glob pattern, or the exact key), if any.
  std::optional<SilenceRow> silenced(const std::string& key, double now);

 private:
  Db& db_;
};

}  // namespace llmwatch
