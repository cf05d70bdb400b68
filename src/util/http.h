#pragma once
// A small libcurl wrapper for webhooks, Slack and the dead-man ping. URLs may carry secrets
// (Slack webhook tokens), so errors never include the URL.
#include <chrono>
#include <string>
#include <vector>

namespace llmwatch {

struct HttpResult {
  long status = 0;  // 0: no response
  std::string body;
  std::string error;       // transport error
  double retry_after = 0;  // from a 429's Retry-After, seconds
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

HttpResult http_request(const std::string& method, const std::string& url, const std::string& body,
                        const std::vector<std::string>& headers, std::chrono::seconds timeout);

}  // namespace llmwatch
