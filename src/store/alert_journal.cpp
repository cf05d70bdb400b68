#include "store/alert_journal.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>

namespace llmwatch {

void AlertJournal::enqueue(const std::string& channel, const std::string& alert_key,
                           const std::string& message_json, double now) {
  db_.prepare(
         "INSERT INTO deliveries(channel, alert_key, message, state, next_attempt, created) "
         "VALUES(?,?,?, 'pending', ?, ?)")
      .bind(1, channel)
      .bind(2, alert_key)
      .bind(3, message_json)
      .bind(4, now)
      .bind(5, now)
      .run();
}

std::vector<DeliveryRow> AlertJournal::due(double now) {
  auto st = db_.prepare(
      "SELECT id, channel, alert_key, message, state, last_error, attempts, next_attempt, created, "
      "COALESCE(sent_at, 0) FROM deliveries WHERE state='pending' AND next_attempt <= ? ORDER BY "
      "created, id");
  st.bind(1, now);
  std::vector<DeliveryRow> out;
  while (st.step())
    out.push_back({st.integer(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5),
                   static_cast<int>(st.integer(6)), st.real(7), st.real(8), st.real(9)});
  return out;
}

void AlertJournal::mark_sent(std::int64_t id, double now) {
  db_.prepare("UPDATE deliveries SET state='sent', sent_at=?, attempts=attempts+1 WHERE id=?")
      .bind(1, now)
      .bind(2, id)
      .run();
}

void AlertJournal::mark_failed(std::int64_t id, const std::string& error, double now,
                               double base_seconds) {
  auto st = db_.prepare("SELECT attempts FROM deliveries WHERE id=?");
  st.bind(1, id);
  int attempts = st.step() ? static_cast<int>(st.integer(0)) : 0;
  double backoff = std::min(3600.0, base_seconds * std::pow(2.0, attempts));
  db_.prepare("UPDATE deliveries SET attempts=attempts+1, last_error=?, next_attempt=? WHERE id=?")
      .bind(1, error)
      .bind(2, now + backoff)
      .bind(3, id)
      .run();
}

int AlertJournal::pending_count() {
  auto st = db_.prepare("SELECT COUNT(*) FROM deliveries WHERE state='pending'");
  st.step();
  return static_cast<int>(st.integer(0));
}

int AlertJournal::sent_count(const std::string& alert_key) {
  auto st = db_.prepare("SELECT COUNT(*) FROM deliveries WHERE state='sent' AND alert_key=?");
  st.bind(1, alert_key);
  st.step();
  return static_cast<int>(st.integer(0));
}

std::int64_t AlertJournal::add_silence(const std::string& pattern, double until,
                                       const std::string& reason, const std::string& by,
                                       double now) {
  db_.prepare("INSERT INTO silences(pattern, until, reason, created_by, created) VALUES(?,?,?,?,?)")
      .bind(1, pattern)
      .bind(2, until)
      .bind(3, reason)
      .bind(4, by)
      .bind(5, now)
      .run();
  return db_.last_insert_id();
}

bool AlertJournal::remove_silence(std::int64_t id) {
  db_.prepare("DELETE FROM silences WHERE id=?").bind(1, id).run();
  return db_.changes() > 0;
}

std::vector<SilenceRow> AlertJournal::silences(double now) {
  auto st = db_.prepare(
      "SELECT id, pattern, reason, created_by, until, created FROM silences WHERE until > ? ORDER "
      "BY id");
  st.bind(1, now);
  std::vector<SilenceRow> out;
  while (st.step())
    out.push_back({st.integer(0), st.text(1), st.text(2), st.text(3), st.real(4), st.real(5)});
  return out;
}

std::optional<SilenceRow> AlertJournal::silenced(const std::string& key, double now) {
  for (const auto& s : silences(now))
    if (s.pattern == key || fnmatch(s.pattern.c_str(), key.c_str(), 0) == 0) return s;
  return std::nullopt;
}

std::map<std::string, std::int64_t> AlertJournal::failed_attempts() {
  std::map<std::string, std::int64_t> out;
  auto st = db_.prepare(
      "SELECT channel, SUM(CASE WHEN state='sent' THEN attempts-1 ELSE attempts END) FROM "
      "deliveries GROUP BY channel");
  while (st.step()) out[st.text(0)] = st.integer(1);
  return out;
}

}  // namespace llmwatch
