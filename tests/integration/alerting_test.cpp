// Alert delivery end to end, with a real HTTP server and a real SMTP server on loopback:
// one message per finding episode, a resolved notice, repeats, Slack blocks and 429 handling,
// retries after an outage (delivered once), grouping, silences, e-mail headers, and secrets
// that never leak.
#include "local_cluster.h"
#include "util/http.h"

namespace llmwatch::testing {
namespace {

struct Recorder {
  TempDir dir;
  std::unique_ptr<BackgroundProcess> server;
  int port = 0;
  Recorder() {
    server = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/python3",
                                 source_dir() + "/tests/helpers/http_recorder.py", dir.path},
        dir / "server.log");
    eventually([&] { return std::filesystem::exists(dir / "port"); }, 20);
    port = std::atoi(read_file(dir / "port").c_str());
  }
  void mode(const std::string& m) { write_file(dir / "mode", m); }
  std::vector<nlohmann::json> requests() {
    std::vector<nlohmann::json> out;
    std::istringstream in(read_file(dir / "requests.jsonl"));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::string url(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }
};

struct AlertSetup {
  LocalCluster& c;
  std::string config;
  AlertSetup(LocalCluster& cluster, const std::string& alerts,
             const std::string& jobs = "[[job]]\n" + job_owner() + "name = \"ghost\"\n",
             const std::string& general = "")
      : c(cluster), config(cluster.dir / "llmwatch.toml") {
    write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") +
                           "\"\nalert_retry_backoff = \"1s\"\n" + general + jobs + alerts);
  }
  ProcessResult cycle() { return llmwatch(config, {"run", "--once"}); }
};

const char* kSecret = "T0SECRET/B0TOKEN/xyzzy";

TEST(Alerting, OneMessagePerEpisodeThenResolvedAndSecretsNeverLeak) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  Recorder hook;
  write_file(c.dir / "hook.url", hook.url(std::string("/hooks/") + kSecret) + "\n");
  write_file(c.dir / "hook.token", "T0SECRET-bearer\n");
  AlertSetup s(c, "[[alert.webhook]]\nname = \"ops\"\nurl_file = \"" + (c.dir / "hook.url") +
                      "\"\ntoken_file = \"" + (c.dir / "hook.token") +
                      "\"\nheaders = [\"X-Team: ml\"]\n");
  std::string all_output;
  for (int i = 0; i < 3; ++i) all_output += s.cycle().err;
  auto reqs = hook.requests();
  ASSERT_EQ(reqs.size(), 1u) << all_output;
  auto body = nlohmann::json::parse(reqs[0]["body"].get<std::string>());
  EXPECT_EQ(body["schema"], "llmwatch.alert/1");
  EXPECT_EQ(body["key"], "job:ghost/absent");
  EXPECT_EQ(body["state"], "firing");
  EXPECT_EQ(body["severity"], "critical");
  EXPECT_EQ(reqs[0]["path"], std::string("/hooks/") + kSecret);
  EXPECT_EQ(reqs[0]["headers"]["Authorization"], "Bearer T0SECRET-bearer");
  EXPECT_EQ(reqs[0]["headers"]["X-Team"], "ml");

  // The job appears: after the hysteresis (2 cycles), exactly one resolved notice.
  ASSERT_TRUE(
      c.slurm({"sbatch", "--job-name=ghost", "--output=/dev/null", "--wrap", "sleep 300"}).ok());
  for (int i = 0; i < 3; ++i) all_output += s.cycle().err;
  reqs = hook.requests();
  ASSERT_EQ(reqs.size(), 2u);
  body = nlohmann::json::parse(reqs[1]["body"].get<std::string>());
  EXPECT_EQ(body["state"], "resolved");
  EXPECT_EQ(body["subject"], "ghost");  // as the firing alert named it (was "job:ghost")
  EXPECT_NE(body["summary"].get<std::string>().find("resolved after"), std::string::npos);

  // The webhook's secret appears nowhere a human or a log shipper reads.
  all_output += llmwatch(s.config, {"status"}).out + llmwatch(s.config, {"status", "--json"}).out;
  all_output += llmwatch(s.config, {"events", "--json"}).out;
  all_output += llmwatch(s.config, {"--log-format", "json", "run", "--once"}).err;
  all_output += llmwatch(s.config, {"config", "check"}).out;
  all_output += llmwatch_sql(c.dir / "state",
                             "SELECT * FROM deliveries; SELECT * FROM events; SELECT * FROM kv;");
  EXPECT_EQ(all_output.find("T0SECRET"), std::string::npos);
}

TEST(Alerting, SlackBlocksAnd429RetryAfterIsHonoured) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  Recorder slack;
  slack.mode("429 2");
  AlertSetup s(c, "[[alert.slack]]\nurl = \"" + slack.url("/services/x") + "\"\n");
  s.cycle();
  auto reqs = slack.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_GE(reqs[1]["t"].get<double>() - reqs[0]["t"].get<double>(), 1.9);  // waited Retry-After: 2
  auto body = nlohmann::json::parse(reqs[1]["body"].get<std::string>());
  ASSERT_TRUE(body["text"].is_string());
  ASSERT_TRUE(body["blocks"].is_array());
  EXPECT_EQ(body["blocks"][0]["type"], "header");
  EXPECT_EQ(body["blocks"][0]["text"]["type"], "plain_text");
  EXPECT_NE(body["blocks"][0]["text"]["text"].get<std::string>().find("job:ghost/absent"),
            std::string::npos);
  EXPECT_EQ(body["blocks"][1]["type"], "section");
  EXPECT_EQ(body["blocks"][1]["fields"][0]["type"], "mrkdwn");
  EXPECT_EQ(reqs[1]["headers"]["Content-Type"], "application/json");
  EXPECT_NE(llmwatch(s.config, {"events"}).out.find("delivered job:ghost/absent to slack#1"),
            std::string::npos);
}

TEST(Alerting, OutageIsRetriedAndDeliveredExactlyOnce) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  Recorder hook;
  hook.mode("500");
  AlertSetup s(c, "[[alert.webhook]]\nurl = \"" + hook.url("/alert") + "\"\n");
  s.cycle();
  EXPECT_EQ(hook.requests().size(), 1u);  // tried, failed
  EXPECT_NE(llmwatch(s.config, {"events"}).out.find("failed: HTTP 500; will retry"),
            std::string::npos);
  hook.mode("ok");
  // After the backoff (1 s here) a later cycle delivers it; later cycles do not repeat it.
  ASSERT_TRUE(eventually(
      [&] {
        s.cycle();
        return hook.requests().size() == 2;
      },
      20));
  s.cycle();
  s.cycle();
  auto reqs = hook.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(reqs[1]["body"].get<std::string>())["key"], "job:ghost/absent");
  EXPECT_EQ(llmwatch_sql(c.dir / "state", "SELECT COUNT(*) FROM deliveries WHERE state='pending'"),
            "0\n");
}

TEST(Alerting, OneCycleOneMessagePerChannelAndSilencesMute) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  Recorder hook;
  std::string jobs;
  for (const char* n : {"ghost-1", "ghost-2", "ghost-3", "quiet"})
    jobs += "[[job]]\n" + job_owner() + "name = \"" + std::string(n) + "\"\n";
  AlertSetup s(c, "[[alert.webhook]]\nurl = \"" + hook.url("/alert") + "\"\n", jobs);
  auto silence = llmwatch(
      s.config, {"silence", "add", "job:quiet/*", "--for", "1h", "--reason", "maintenance"});
  ASSERT_TRUE(silence.ok()) << silence.err;
  EXPECT_NE(llmwatch(s.config, {"silence", "list"}).out.find("job:quiet/*"), std::string::npos);
  s.cycle();
  auto reqs = hook.requests();
  ASSERT_EQ(reqs.size(), 1u);  // three findings, one message
  auto body = nlohmann::json::parse(reqs[0]["body"].get<std::string>());
  EXPECT_EQ(body["summary"], "3 alerts");
  ASSERT_EQ(body["grouped"].size(), 3u);
  EXPECT_EQ(reqs[0]["body"].get<std::string>().find("job:quiet"), std::string::npos);
  EXPECT_NE(llmwatch(s.config, {"events"}).out.find("muted by silence #1 (maintenance)"),
            std::string::npos);
  // Removing the silence does not replay the muted episode; a new one would be sent.
  EXPECT_TRUE(llmwatch(s.config, {"silence", "remove", "1"}).ok());
  EXPECT_TRUE(llmwatch(s.config, {"silence", "list"}).out.empty());
}

TEST(Alerting, StillFiringIsRepeatedAfterRepeatEvery) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  Recorder hook;
  AlertSetup s(c, "[[alert.webhook]]\nurl = \"" + hook.url("/alert") + "\"\n",
               "[[job]]\n" + job_owner() + "name = \"ghost\"\n", "alert_repeat_every = \"2s\"\n");
  s.cycle();
  s.cycle();
  EXPECT_EQ(hook.requests().size(), 1u);
  ASSERT_TRUE(eventually(
      [&] {
        s.cycle();
        return hook.requests().size() == 2;
      },
      20));
  auto body = nlohmann::json::parse(hook.requests()[1]["body"].get<std::string>());
  EXPECT_NE(body["summary"].get<std::string>().find("still firing after"), std::string::npos);
}

TEST(Alerting, EmailArrivesWithProperHeaders) {
  LLMWATCH_REQUIRE_CLUSTER();
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  TempDir maildir;
  std::string port = std::to_string(free_port());
  BackgroundProcess smtp({"/usr/bin/python3", "-m", "aiosmtpd", "-n", "-l", "127.0.0.1:" + port,
                          "-c", "aiosmtpd.handlers.Mailbox", maildir / "box"},
                         maildir / "smtp.log");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(maildir / "box"); }, 20))
      << read_file(maildir / "smtp.log");
  AlertSetup s(c,
               "[[alert.email]]\nto = \"oncall@example.org\"\nfrom = "
               "\"llmwatch@example.org\"\nsmtp_url = \"smtp://127.0.0.1:" +
                   port + "\"\nstarttls = false\n");
  std::string mail;
  ASSERT_TRUE(eventually(
      [&] {
        s.cycle();
        if (!std::filesystem::exists(maildir / "box/new")) return false;
        for (const auto& f : std::filesystem::directory_iterator(maildir / "box/new"))
          mail = read_file(f.path());
        return !mail.empty();
      },
      30))
      << llmwatch(s.config, {"events"}).out << read_file(maildir / "smtp.log");
  EXPECT_NE(mail.find("Subject: [CRITICAL] job:ghost/absent"), std::string::npos) << mail;
  EXPECT_NE(mail.find("From: llmwatch@example.org"), std::string::npos);
  EXPECT_NE(mail.find("To: oncall@example.org"), std::string::npos);
  EXPECT_NE(mail.find("Date: "), std::string::npos);
  EXPECT_NE(mail.find("Message-ID: <"), std::string::npos);
  EXPECT_NE(mail.find("nothing RUNNING or PENDING for ghost"), std::string::npos);
}

// The real Prometheus Alertmanager (Debian's prometheus-alertmanager) receives each finding
// as an alert with llmwatch's labels, and ends it when the finding resolves.
TEST(Alerting, AlertmanagerGetsTheFindingAndItsEnd) {
  LLMWATCH_REQUIRE_CLUSTER();
  if (access("/usr/bin/prometheus-alertmanager", X_OK) != 0)
    GTEST_SKIP() << "prometheus-alertmanager is not installed (setup.sh installs it)";
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string port = std::to_string(free_port());
  write_file(c.dir / "am.yml", "route:\n  receiver: nobody\nreceivers:\n  - name: nobody\n");
  BackgroundProcess am({"/usr/bin/prometheus-alertmanager", "--config.file=" + (c.dir / "am.yml"),
                        "--storage.path=" + (c.dir / "am"),
                        "--web.listen-address=127.0.0.1:" + port, "--cluster.listen-address="},
                       c.dir / "am.log");
  std::string api = "http://127.0.0.1:" + port + "/api/v2/alerts";
  auto alerts = [&] {
    auto r = http_request("GET", api + "?active=true&silenced=false&inhibited=false", "", {},
                          std::chrono::seconds(5));
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_array() ? j : nlohmann::json::array();
  };
  ASSERT_TRUE(eventually(
      [&] { return http_request("GET", api, "", {}, std::chrono::seconds(2)).ok(); }, 30))
      << read_file(am.log);
  AlertSetup s(c,
               "[[alert.alertmanager]]\nname = \"am\"\nurl = \"http://127.0.0.1:" + port + "\"\n");
  ASSERT_TRUE(s.cycle().ok());
  nlohmann::json firing;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& a : alerts())
          if (a["labels"].value("key", "") == "job:ghost/absent") firing = a;
        return !firing.is_null();
      },
      20))
      << llmwatch(s.config, {"events"}).out;
  EXPECT_EQ(firing["labels"]["alertname"], "absent");
  EXPECT_EQ(firing["labels"]["severity"], "critical");
  EXPECT_EQ(firing["annotations"]["subject"], "ghost");
  EXPECT_EQ(firing["labels"]["source"], "llmwatch");
  EXPECT_NE(firing["annotations"]["summary"].get<std::string>().find("nothing RUNNING or PENDING"),
            std::string::npos)
      << firing.dump();
  // The job appears; after the hysteresis the resolved notice ends the alert.
  ASSERT_TRUE(
      c.slurm({"sbatch", "--job-name=ghost", "--output=/dev/null", "--wrap", "sleep 300"}).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.cycle().ok());
  EXPECT_TRUE(eventually(
      [&] {
        for (const auto& a : alerts())
          if (a["labels"].value("key", "") == "job:ghost/absent") return false;
        return true;
      },
      20))
      << alerts().dump() << llmwatch(s.config, {"events"}).out
      << llmwatch_sql(c.dir / "state", "SELECT state, message FROM deliveries");
  EXPECT_NE(llmwatch(s.config, {"events"}).out.find("delivered job:ghost/absent to am"),
            std::string::npos);
}

}  // namespace
}  // namespace llmwatch::testing
