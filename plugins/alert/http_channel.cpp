// webhook and slack: a JSON POST. webhook sends the alert schema as is (Alertmanager-style
// receivers, chat bridges); slack sends an incoming-webhook message with blocks.
// Config: [[alert.webhook]] / [[alert.slack]] url (or url_file, or "${ENV}"), timeout,
// token (or token_file: sent as "Authorization: Bearer ..."), headers = ["X-Team: ml"].
// A 429 is retried once after its Retry-After (capped by the timeout).
#include <nlohmann/json.hpp>
#include <thread>

#include "alert/alert_message.h"
#include "util/http.h"
#include "util/text.h"

namespace llmwatch {

// Everything from outside (job names, log lines) is escaped for Slack's markup, so a job
// named "<!channel>" is text, not a page to everyone; cuts fall on character boundaries.
static std::string slack_payload(const AlertMessage& m) {
  std::string evidence;
  for (const auto& line : m.evidence) evidence += line + "\n";
  std::string actions;
  for (const auto& a : m.actions) actions += "• " + a + "\n";
  nlohmann::json blocks = nlohmann::json::array();
  blocks.push_back({{"type", "header"},
                    {"text", {{"type", "plain_text"}, {"text", truncate_utf8(m.title(), 150)}}}});
  blocks.push_back({{"type", "section"},
                    {"fields",
                     {{{"type", "mrkdwn"}, {"text", "*Severity*\n" + slack_escape(m.severity)}},
                      {{"type", "mrkdwn"}, {"text", "*Subject*\n" + slack_escape(m.subject)}}}}});
  if (!evidence.empty())
    blocks.push_back({{"type", "section"},
                      {"text",
                       {{"type", "mrkdwn"},
                        {"text", "```" + truncate_utf8(slack_escape(evidence), 2800) + "```"}}}});
  if (!actions.empty())
    blocks.push_back(
        {{"type", "section"},
         {"text",
          {{"type", "mrkdwn"},
           {"text", "*What llmwatch did*\n" + truncate_utf8(slack_escape(actions), 2800)}}}});
  return json_dump(nlohmann::json{{"text", slack_escape(m.title())}, {"blocks", blocks}});
}

Delivery deliver_http(const AlertChannel& channel, const AlertMessage& message) {
  Delivery d{channel.id, false, ""};
  std::string body = channel.type == "slack" ? slack_payload(message) : message.to_json();
  std::vector<std::string> headers = {"Content-Type: application/json"};
  headers.insert(headers.end(), channel.headers.begin(), channel.headers.end());
  if (!channel.token.empty()) headers.push_back("Authorization: Bearer " + channel.token);
  auto r = http_request("POST", channel.url, body, headers, channel.timeout);
  if (r.status == 429 && r.retry_after > 0 && r.retry_after < channel.timeout.count()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(r.retry_after));
    r = http_request("POST", channel.url, body, headers, channel.timeout);
  }
  d.ok = r.ok();
  if (!d.ok) d.error = r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error;
  return d;
}

}  // namespace llmwatch
