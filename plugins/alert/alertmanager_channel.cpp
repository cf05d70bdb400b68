// alertmanager: Prometheus Alertmanager's API (POST /api/v2/alerts), so llmwatch's findings are
// routed, grouped, inhibited and silenced with the cluster's other alerts. Each alert goes as
// itself, never grouped by llmwatch: Alertmanager groups by its own rules.
//   labels:      alertname (the finding's kind: hung, absent, gpu-fault ...), key, severity,
//                host, source="llmwatch": only what stays the same from firing to resolved,
//                since Alertmanager knows an alert by its labels
//   annotations: subject, summary, description (the evidence), actions (what llmwatch did)
//   startsAt/endsAt: a resolved finding ends when it was resolved; a firing one expires after
//                expire_after unless announced again (llmwatch repeats every
//                alert_repeat_every, which config check keeps shorter); a notice (a near miss:
//                told once, never resolved) after kNoticeLasts.
// Config: [[alert.alertmanager]] url = "http://alertmanager:9093" (the API path is added),
// token / token_file, headers, timeout, expire_after.
#include <nlohmann/json.hpp>

#include "alert/channel.h"
#include "alert/http_post.h"
#include "util/strings.h"
#include "util/text.h"
#include "util/units.h"

namespace llmwatch {

// Long enough for Alertmanager's group_wait and a notification; nothing will resolve it.
constexpr double kNoticeLasts = 300;

std::string alertmanager_payload(const std::vector<AlertMessage>& messages, Seconds expire_after) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const auto& m : messages) {
    std::string kind =
        m.key.substr(m.key.rfind('/') == std::string::npos ? 0 : m.key.rfind('/') + 1);
    std::string description;
    for (const auto& line : m.evidence) description += line + "\n";
    std::string actions;
    for (const auto& a : m.actions) actions += a + "\n";
    nlohmann::json a = {
        {"labels",
         {{"alertname", kind},
          {"key", m.key},
          {"severity", m.severity},
          {"host", m.host},
          {"source", "llmwatch"}}},
        {"annotations",
         {{"subject", m.subject},
          {"summary", m.summary},
          {"description", truncate_utf8(description, 8000)},
          {"actions", truncate_utf8(actions, 4000)}}},
        {"startsAt", format_utc(m.ts)},
        {"endsAt", format_utc(m.state == "resolved" ? m.ts
                              : m.notice            ? m.ts + kNoticeLasts
                                         : m.ts + static_cast<double>(expire_after.count()))}};
    alerts.push_back(std::move(a));
  }
  return json_dump(alerts);
}

namespace {

constexpr Seconds kDefaultExpireAfter{7 * 3600};

Delivery deliver_alertmanager(const AlertChannel& channel,
                              const std::vector<AlertMessage>& messages) {
  std::string url = channel.text("url");
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!ends_with(url, "/api/v2/alerts")) url += "/api/v2/alerts";
  return post_json(
      channel, url,
      alertmanager_payload(messages, channel.duration("expire_after", kDefaultExpireAfter)));
}

ChannelInfo alertmanager_info() {
  ChannelInfo info{"alertmanager", "Prometheus Alertmanager, API v2", http_options(), {}};
  info.options.push_back({"expire_after", KeyKind::Duration, false, false,
                          "a firing alert's endsAt; longer than alert_repeat_every"});
  // llmwatch announces a firing finding again every alert_repeat_every: an alert that expired
  // before that would resolve in Alertmanager while it still fires.
  info.check = [](const AlertChannel& a, const Config& c) -> Status {
    if (a.duration("expire_after", kDefaultExpireAfter) > c.alert_repeat_every) return {};
    return Error{"expire_after must be longer than alert_repeat_every (" +
                 format_duration(c.alert_repeat_every) +
                 "), or a still-firing alert expires before it is announced again"};
  };
  return info;
}

}  // namespace

// Each alert goes as itself: Alertmanager groups by its own rules.
LLMWATCH_REGISTER_CHANNEL(alertmanager_info(), deliver_alertmanager);

}  // namespace llmwatch
