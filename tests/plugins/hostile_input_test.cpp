// Hostile names and reasons (spaces, quotes, ';', $(...), backticks, unicode, newlines) reach
// Slurm only as single argv elements and come out of the alert JSON exactly as they went in.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "alert/alert_message.h"
#include "slurm/slurm_client.h"
#include "test_util.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

const std::string kHostile =
    "llmwatch: Xid 79 \"GPU 3\"; rm -rf / $(touch PWNED) `touch PWNED2` ünïcødé ✓ 'q' \\ end";

TEST(HostileInput, ReasonReachesScontrolAsOneArgvElement) {
  testing::TempDir dir;
  // A stand-in scontrol that records its argv, one element per line (NUL-free input).
  testing::write_file(dir / "scontrol",
                      "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n--\\n' \"$a\"; done > \"" +
                          dir / "argv" + "\"\n");
  std::filesystem::permissions(dir / "scontrol", std::filesystem::perms::owner_all);
  SlurmSettings s;
  s.bin_dir = dir.path;
  SlurmClient slurm(s);
  ASSERT_TRUE(slurm.update_node("node 1;$(id)", "drain", kHostile)) << "scontrol refused";
  auto argv = testing::read_file(dir / "argv");
  EXPECT_EQ(argv, "update\n--\nnodename=node 1;$(id)\n--\nstate=drain\n--\nreason=" + kHostile +
                      "\n--\n");
  EXPECT_FALSE(std::filesystem::exists("PWNED"));
  EXPECT_FALSE(std::filesystem::exists("PWNED2"));
  EXPECT_FALSE(std::filesystem::exists(dir / "PWNED"));
}

TEST(HostileInput, AlertJsonRoundTripsAndStaysValid) {
  AlertMessage m;
  m.key = "job:" + kHostile + "/hung";
  m.subject = kHostile + "\nsecond line\t\x01";
  m.summary = kHostile;
  m.evidence = {kHostile, "\"}]}{\"injected\": true"};
  m.severity = "critical";
  m.state = "firing";
  auto json = m.to_json();
  auto parsed = nlohmann::json::parse(json, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json;
  EXPECT_FALSE(parsed.contains("injected"));
  auto back = AlertMessage::from_json(json);
  EXPECT_EQ(back.key, m.key);
  EXPECT_EQ(back.summary, kHostile);
  EXPECT_EQ(back.evidence, m.evidence);
  // Titles and text bodies (e-mail, Slack) carry no raw control bytes.
  for (char c : m.title() + m.text()) {
    if (static_cast<unsigned char>(c) < 0x20) {
      EXPECT_TRUE(c == '\n' || c == '\t') << int(c);
    }
  }
}

}  // namespace
}  // namespace llmwatch
