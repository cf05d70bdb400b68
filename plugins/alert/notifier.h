#pragma once
// From alert to inbox: queue_alert() writes one delivery per interested channel into the
// journal (after silences and routing); flush_deliveries() sends what is due at the end of
// each cycle, one grouped message per channel, and retries failures with backoff later.
#include <string>
#include <vector>

#include "alert/alert_message.h"
#include "config/config.h"

namespace llmwatch {

class Store;

struct FindingRow;

// The message about a stored finding: a repeat ("still firing") or a resolution.
AlertMessage message_for(const FindingRow& row, const std::string& state,
                         const std::string& summary, double now);

struct QueueResult {
  std::vector<std::string> channels;  // queued for these
  std::string silenced_by;            // "silence #3 (maintenance)" when muted
};

QueueResult queue_alert(const Config& config, Store& store, const AlertMessage& message,
                        double now);

struct FlushResult {
  int sent = 0, failed = 0;
};

FlushResult flush_deliveries(const Config& config, Store& store, double now);

}  // namespace llmwatch
