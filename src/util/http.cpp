#include "util/http.h"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>

namespace llmwatch {
namespace {

size_t collect(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() < (1 << 20)) out->append(data, size * n);
  return size * n;
}

size_t header_line(char* data, size_t size, size_t n, void* user) {
  std::string line(data, size * n);
  auto* retry_after = static_cast<double*>(user);
  if (line.size() > 12 &&
      (line.rfind("Retry-After:", 0) == 0 || line.rfind("retry-after:", 0) == 0))
    *retry_after = std::atof(line.c_str() + 12);
  return size * n;
}

}  // namespace

HttpResult http_request(const std::string& method, const std::string& url, const std::string& body,
                        const std::vector<std::string>& headers, std::chrono::seconds timeout) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpResult result;
  CURL* curl = curl_easy_init();
  if (!curl) return result.error = "curl init failed", result;
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, header_line);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &result.retry_after);
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK)
    result.error = curl_easy_strerror(rc);
  else
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return result;
}

}  // namespace llmwatch
