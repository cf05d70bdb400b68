#include "alert/alert_message.h"

#include <nlohmann/json.hpp>

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
  return nlohmann::json{{"schema", "llmwatch.alert/1"}, {"key", key},         {"state", state},
                        {"severity", severity},          {"subject", subject}, {"summary", summary},
                        {"evidence", evidence},          {"actions", actions}, {"ts", ts},
                        {"host", host}}
      .dump();
}

std::vector<Delivery> deliver(const Config& config, const AlertMessage& message) {
  std::vector<Delivery> out;
  int rank = severity_rank(severity_from_name(message.severity));
  for (const auto& channel : config.alerts) {
    if (message.state != "resolved" && rank < severity_rank(severity_from_name(channel.min_severity))) continue;
    if (channel.type == "exec") out.push_back(deliver_exec(channel, message));
    else if (channel.type == "webhook" || channel.type == "slack") out.push_back(deliver_http(channel, message));
    else out.push_back({channel.type, false, "channel type not implemented yet"});
  }
  return out;
}

}  // namespace llmwatch
