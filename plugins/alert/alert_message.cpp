#include "alert/alert_message.h"

#include <fnmatch.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "alert/channel.h"
#include "rules/finding.h"

namespace llmwatch {

std::string AlertMessage::title() const {
  std::string sev = state == "resolved" ? "RESOLVED" : severity;
  for (auto& c : sev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "[" + sev + "] " + key + " — " + summary;
}

std::string AlertMessage::text() const {
  std::string out = title() + "\n";
  if (!evidence.empty()) {
    out += "\nEvidence:\n";
    for (const auto& line : evidence) out += "  " + line + "\n";
  }
  if (!actions.empty()) {
    out += "\nWhat llmwatch did:\n";
    for (const auto& a : actions) out += "  - " + a + "\n";
  }
  out += "\n-- llmwatch on " + host + "\n";
  return out;
}

std::string AlertMessage::to_json() const {
  return nlohmann::json{{"schema", "llmwatch.alert/1"},
                        {"key", key},
                        {"state", state},
                        {"severity", severity},
                        {"subject", subject},
                        {"summary", summary},
                        {"evidence", evidence},
                        {"actions", actions},
                        {"ts", ts},
                        {"host", host},
                        {"notice", notice},
                        {"grouped", grouped}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

AlertMessage AlertMessage::from_json(const std::string& text) {
  AlertMessage m;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return m;
  m.key = j.value("key", "");
  m.state = j.value("state", "firing");
  m.severity = j.value("severity", "warning");
  m.subject = j.value("subject", "");
  m.summary = j.value("summary", "");
  m.evidence = j.value("evidence", std::vector<std::string>{});
  m.actions = j.value("actions", std::vector<std::string>{});
  m.grouped = j.value("grouped", std::vector<std::string>{});
  m.ts = j.value("ts", 0.0);
  m.host = j.value("host", "");
  m.notice = j.value("notice", false);
  return m;
}

AlertMessage group_messages(const std::vector<AlertMessage>& messages) {
  if (messages.size() == 1) return messages[0];
  AlertMessage g;
  g.key = "group";
  g.state = "firing";
  g.severity = "info";
  int rank = -1;
  for (const auto& m : messages) {
    int r = severity_rank(severity_from_name(m.severity));
    if (m.state != "resolved" && r > rank) rank = r, g.severity = m.severity;
    g.grouped.push_back(m.title());
    g.ts = std::max(g.ts, m.ts);
    g.host = m.host;
    for (const auto& a : m.actions) g.actions.push_back(m.key + ": " + a);
  }
  bool all_resolved = std::all_of(messages.begin(), messages.end(),
                                  [](const AlertMessage& m) { return m.state == "resolved"; });
  if (all_resolved) g.state = "resolved";
  g.subject = "llmwatch";
  g.summary = std::to_string(messages.size()) + " alerts";
  g.evidence = g.grouped;
  return g;
}

bool channel_wants(const AlertChannel& channel, const AlertMessage& message) {
  bool matched = false;
  for (const auto& pattern : channel.match)
    matched |= fnmatch(pattern.c_str(), message.key.c_str(), 0) == 0;
  if (!matched) return false;
  if (message.state == "resolved") return true;
  return severity_rank(severity_from_name(message.severity)) >=
         severity_rank(severity_from_name(channel.min_severity));
}

Delivery deliver_batch(const AlertChannel& channel, const std::vector<AlertMessage>& messages) {
  if (const auto* deliver = find_channel(channel.type)) return (*deliver)(channel, messages);
  return {channel.id, false, "unknown channel type " + channel.type};
}

}  // namespace llmwatch
