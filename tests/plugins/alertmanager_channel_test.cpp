#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "alert/alert_message.h"
#include "config/config.h"

namespace llmwatch {
namespace {

std::string errors(const std::string& toml) {
  std::string out;
  for (const auto& e : load_config_string(toml, "a.toml").errors) out += e.str() + "\n";
  return out;
}

AlertMessage message(const std::string& key, const std::string& state) {
  AlertMessage m;
  m.key = key;
  m.state = state;
  m.severity = "critical";
  m.subject = "tr11";
  m.summary = "4_2: no step progress for 12m";
  m.evidence = {"global_step: 40", "[rank0] heartbeat"};
  m.actions = {"cancel: done — scancel 4_2"};
  m.ts = 1795385658;  // 2026-11-22T22:14:18Z
  m.host = "login-1";
  return m;
}

// Each alert goes as itself, labelled so that Alertmanager can route, group and inhibit it; a
// firing one expires after expire_after, a resolved one ends when it was resolved.
TEST(AlertmanagerChannel, OneAlertPerFindingWithLabelsAndEnds) {
  auto body = nlohmann::json::parse(alertmanager_payload(
      {message("job:tr11/hung", "firing"), message("node:gpu-7/gpu", "resolved")},
      Seconds(7 * 3600)));
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["labels"]["alertname"], "hung");
  EXPECT_EQ(body[0]["labels"]["key"], "job:tr11/hung");
  EXPECT_EQ(body[0]["labels"]["severity"], "critical");
  EXPECT_EQ(body[0]["labels"]["source"], "llmwatch");
  EXPECT_EQ(body[0]["annotations"]["summary"], "4_2: no step progress for 12m");
  EXPECT_EQ(body[0]["annotations"]["description"], "global_step: 40\n[rank0] heartbeat\n");
  EXPECT_EQ(body[0]["startsAt"], "2026-11-22T22:14:18Z");
  EXPECT_EQ(body[0]["endsAt"], "2026-11-23T05:14:18Z");
  EXPECT_EQ(body[1]["labels"]["alertname"], "gpu");
  EXPECT_EQ(body[1]["endsAt"], "2026-11-22T22:14:18Z");
}

// A notice (a near miss, told once at info) is never resolved by llmwatch: Alertmanager would
// have kept it firing for expire_after (7 h). It ends after five minutes.
TEST(AlertmanagerChannel, ANoticeEndsByItselfSoon) {
  AlertMessage m = message("job:tr11/hung", "firing");
  m.notice = true;
  auto body = nlohmann::json::parse(alertmanager_payload({m}, Seconds(7 * 3600)));
  ASSERT_EQ(body.size(), 1u);
  EXPECT_EQ(body[0]["endsAt"], "2026-11-22T22:19:18Z");
  EXPECT_TRUE(AlertMessage::from_json(m.to_json()).notice);
  EXPECT_FALSE(AlertMessage::from_json(message("k", "firing").to_json()).notice);
}

TEST(AlertmanagerChannel, ConfigNeedsUrlAndAnExpiryLongerThanTheRepeat) {
  EXPECT_EQ(errors("[[alert.alertmanager]]\nurl = \"http://127.0.0.1:9093\"\n"), "");
  EXPECT_NE(errors("[[alert.alertmanager]]\nname = \"am\"\n").find("needs url"), std::string::npos);
  EXPECT_NE(errors("[llmwatch]\nalert_repeat_every = \"6h\"\n[[alert.alertmanager]]\n"
                   "url = \"http://x\"\nexpire_after = \"1h\"\n")
                .find("expire_after must be longer than alert_repeat_every"),
            std::string::npos);
  EXPECT_NE(errors("[[alert.webhook]]\nurl = \"http://x\"\nexpire_after = \"8h\"\n")
                .find("belongs to another channel type"),
            std::string::npos);
}

}  // namespace
}  // namespace llmwatch
