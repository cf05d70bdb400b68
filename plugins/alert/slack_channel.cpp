// slack: an incoming-webhook message with blocks, one grouped message per cycle.
// Config: [[alert.slack]] url (or url_file, or "${ENV}"), token / token_file, headers, timeout.
#include <nlohmann/json.hpp>

#include "alert/channel.h"
#include "alert/http_post.h"
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

LLMWATCH_REGISTER_CHANNEL((ChannelInfo{"slack", "a Slack incoming webhook", http_options(), {}}),
                          grouped([](const AlertChannel& channel, const AlertMessage& message) {
                            return post_json(channel, channel.text("url"), slack_payload(message));
                          }));

}  // namespace llmwatch
