#include "alert/notifier.h"

#include <map>

#include "store/alert_journal.h"
#include "store/store.h"
#include "util/paths.h"

namespace llmwatch {

AlertMessage message_for(const FindingRow& row, const std::string& state,
                         const std::string& summary, double now) {
  AlertMessage m;
  m.key = row.key;
  m.state = state;
  m.severity = row.severity;
  // The finding's subject as its firing alert named it: "job:tr11/hung" → "tr11".
  std::string scope = row.key.substr(0, row.key.find('/'));
  m.subject = scope.substr(scope.find(':') == std::string::npos ? 0 : scope.find(':') + 1);
  m.summary = summary;
  m.ts = now;
  m.host = hostname();
  return m;
}

QueueResult queue_alert(const Config& config, Store& store, const AlertMessage& message,
                        double now) {
  QueueResult r;
  AlertJournal journal(store);
  if (auto s = journal.silenced(message.key, now)) {
    r.silenced_by = "silence #" + std::to_string(s->id) + " (" + s->reason + ")";
    return r;
  }
  std::string json = message.to_json();
  for (const auto& channel : config.alerts) {
    if (!channel_wants(channel, message)) continue;
    journal.enqueue(channel.id, message.key, json, now);
    r.channels.push_back(channel.id);
  }
  return r;
}

FlushResult flush_deliveries(const Config& config, Store& store, double now) {
  FlushResult result;
  AlertJournal journal(store);
  std::map<std::string, std::vector<DeliveryRow>> by_channel;
  for (auto& row : journal.due(now)) by_channel[row.channel].push_back(std::move(row));
  for (auto& entry : by_channel) {
    // Plain references, not structured bindings: lambdas below capture them (C++20 allows
    // capturing bindings, clang 14 does not).
    const std::string& channel_id = entry.first;
    std::vector<DeliveryRow>& rows = entry.second;
    const AlertChannel* channel = nullptr;
    for (const auto& c : config.alerts)
      if (c.id == channel_id) channel = &c;
    if (!channel) {
      // The channel was removed from the config: nobody can receive these any more.
      for (const auto& row : rows)
        journal.mark_failed(row.id, "channel no longer configured", now + 86400 * 365);
      continue;
    }
    std::vector<AlertMessage> messages;
    for (const auto& row : rows) messages.push_back(AlertMessage::from_json(row.message_json));
    Delivery d = deliver_batch(*channel, messages);
    store.transaction([&] {
      for (const auto& row : rows) {
        if (d.ok)
          journal.mark_sent(row.id, now);
        else
          journal.mark_failed(row.id, d.error, now,
                              static_cast<double>(config.alert_retry_backoff.count()));
      }
      std::string what =
          rows.size() == 1 ? rows[0].alert_key : std::to_string(rows.size()) + " alerts";
      if (d.ok)
        store.add_event(now, "delivery", channel_id, "info",
                        "delivered " + what + " to " + channel_id);
      else
        store.add_event(
            now, "delivery", channel_id, "warning",
            "delivery of " + what + " to " + channel_id + " failed: " + d.error + "; will retry");
    });
    (d.ok ? result.sent : result.failed) += static_cast<int>(rows.size());
  }
  return result;
}

}  // namespace llmwatch
