#include "alert/http_post.h"

#include <thread>

#include "util/http.h"

namespace llmwatch {

std::vector<ChannelOption> http_options() {
  return {{"url", KeyKind::String, true, true, "where to POST"},
          {"token", KeyKind::String, true, false, "sent as Authorization: Bearer <token>"},
          {"headers", KeyKind::StringList, false, false, "extra \"Name: value\" headers"}};
}

Delivery post_json(const AlertChannel& channel, const std::string& url, const std::string& body) {
  Delivery d{channel.id, false, ""};
  std::vector<std::string> headers = {"Content-Type: application/json"};
  for (const auto& h : channel.list("headers")) headers.push_back(h);
  if (auto token = channel.text("token"); !token.empty())
    headers.push_back("Authorization: Bearer " + token);
  auto r = http_request("POST", url, body, headers, channel.timeout);
  if (r.status == 429 && r.retry_after > 0 && r.retry_after < channel.timeout.count()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(r.retry_after));
    r = http_request("POST", url, body, headers, channel.timeout);
  }
  d.ok = r.ok();
  if (!d.ok) d.error = r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error;
  return d;
}

}  // namespace llmwatch
