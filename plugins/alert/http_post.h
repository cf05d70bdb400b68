#pragma once
// What the HTTP channels (slack, webhook, alertmanager) share: their keys and the POST.
#include <string>
#include <vector>

#include "alert/alert_message.h"
#include "config/channel_catalogue.h"

namespace llmwatch {

// url (required; secret, so also url_file or "${ENV}"), token (secret: sent as
// "Authorization: Bearer <token>"), headers = ["X-Team: ml"].
std::vector<ChannelOption> http_options();

// POSTs a JSON body to `url` with the channel's headers and token, within its timeout. A 429 is
// retried once after its Retry-After (when that fits in the timeout).
Delivery post_json(const AlertChannel& channel, const std::string& url, const std::string& body);

}  // namespace llmwatch
