// email: SMTP through libcurl, with STARTTLS (smtp://, starttls = true) or SMTPS
// (smtps://), optional auth (username + password or password_file), and the headers mail
// systems expect: Date, Message-ID, From, To, Subject. Plain text body.
// Config: [[alert.email]] to, from, smtp_url, starttls, username, password(_file), timeout.
#include <curl/curl.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <mutex>

#include "alert/channel.h"
#include "util/paths.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

struct Upload {
  std::string data;
  size_t pos = 0;
};

size_t read_body(char* buffer, size_t size, size_t n, void* user) {
  auto* u = static_cast<Upload*>(user);
  size_t len = std::min(size * n, u->data.size() - u->pos);
  std::memcpy(buffer, u->data.data() + u->pos, len);
  u->pos += len;
  return len;
}

std::string rfc2822_now() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S %z", &tm);
  return buf;
}

// Header values must stay on one line.
std::string header_safe(const std::string& s) {
  std::string out = sanitize_line(s, 200);
  for (auto& c : out)
    if (c == '\r' || c == '\n') c = ' ';
  return out;
}

std::string email_text(const std::string& from, const std::string& to, const AlertMessage& message,
                       const std::string& message_id) {
  std::string body = message.text();
  // SMTP: CRLF line ends, and a line starting with '.' is doubled.
  std::string crlf;
  for (const auto& line : split(body, '\n'))
    crlf += (line.rfind(".", 0) == 0 ? "." : "") + line + "\r\n";
  return "Date: " + rfc2822_now() + "\r\nMessage-ID: " + message_id +
         "\r\nFrom: " + header_safe(from) + "\r\nTo: " + header_safe(to) +
         "\r\nSubject: " + header_safe(message.title()) +
         "\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; "
         "charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n"
         "X-Mailer: llmwatch\r\n\r\n" +
         crlf;
}

Delivery deliver_email(const AlertChannel& channel, const AlertMessage& message) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  Delivery d{channel.id, false, ""};
  CURL* curl = curl_easy_init();
  if (!curl) return d.error = "curl init failed", d;
  std::string from = channel.text("from").empty() ? "llmwatch@" + hostname() : channel.text("from");
  std::string message_id = "<" + std::to_string(static_cast<long long>(message.ts * 1000)) + "." +
                           std::to_string(getpid()) + ".llmwatch@" + hostname() + ">";
  Upload upload{email_text(from, channel.text("to"), message, message_id)};
  curl_slist* rcpt = nullptr;
  for (const auto& to : split(channel.text("to"), ','))
    rcpt = curl_slist_append(rcpt, std::string(trim(to)).c_str());
  const std::string smtp_url = channel.text("smtp_url"), username = channel.text("username"),
                    password = channel.text("password");
  curl_easy_setopt(curl, CURLOPT_URL, smtp_url.c_str());
  if (smtp_url.rfind("smtp://", 0) == 0)
    curl_easy_setopt(
        curl, CURLOPT_USE_SSL,
        static_cast<long>(channel.flag("starttls", true) ? CURLUSESSL_ALL : CURLUSESSL_NONE));
  if (!username.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERNAME, username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, password.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_MAIL_FROM, ("<" + from + ">").c_str());
  curl_easy_setopt(curl, CURLOPT_MAIL_RCPT, rcpt);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
  curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(channel.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl);
  d.ok = rc == CURLE_OK;
  if (!d.ok) d.error = curl_easy_strerror(rc);  // never the URL or the password
  curl_slist_free_all(rcpt);
  curl_easy_cleanup(curl);
  return d;
}

}  // namespace

LLMWATCH_REGISTER_CHANNEL(
    (ChannelInfo{"email",
                 "SMTP (smtp:// with STARTTLS, or smtps://)",
                 {{"to", KeyKind::String, false, true, "comma-separated recipients"},
                  {"from", KeyKind::String, false, false, "default llmwatch@<host>"},
                  {"smtp_url", KeyKind::String, false, true, "smtps://host:465 or smtp://host:587"},
                  {"starttls", KeyKind::Bool, false, false, "smtp:// only: require STARTTLS"},
                  {"username", KeyKind::String, false, false, "SMTP auth user"},
                  {"password", KeyKind::String, true, false, "SMTP auth password"}},
                 {}}),
    grouped(deliver_email));

}  // namespace llmwatch
