// webhook: a JSON POST of the alert schema as is (alert_message.h; Alertmanager-style
// receivers, chat bridges, ticketing). One grouped message per cycle.
// Config: [[alert.webhook]] url (or url_file, or "${ENV}"), token / token_file, headers, timeout.
#include "alert/channel.h"
#include "alert/http_post.h"

namespace llmwatch {

LLMWATCH_REGISTER_CHANNEL(
    (ChannelInfo{
        "webhook", "POST the alert as JSON (schema llmwatch.alert/1)", http_options(), {}}),
    grouped([](const AlertChannel& channel, const AlertMessage& message) {
      return post_json(channel, channel.text("url"), message.to_json());
    }));

}  // namespace llmwatch
