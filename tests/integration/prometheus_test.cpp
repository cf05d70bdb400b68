// Operator integration: the daemon's /metrics passes promtool and is scraped by a real
// Prometheus on loopback; /healthz answers; the shipped alert rules and dashboard are
// valid and use only metrics llmwatch exports.
#include <regex>
#include <set>

#include "local_cluster.h"
#include "util/http.h"

namespace llmwatch::testing {
namespace {

std::set<std::string> metric_names(const std::string& exposition) {
  std::set<std::string> names;
  std::regex type_line(R"(# TYPE (\w+) )");
  for (std::sregex_iterator it(exposition.begin(), exposition.end(), type_line), end; it != end;
       ++it)
    names.insert((*it)[1]);
  return names;
}

TEST(Prometheus, MetricsAreValidScrapedAndUsedByTheShippedRulesAndDashboard) {
  LLMWATCH_REQUIRE_CLUSTER();
  if (access("/usr/bin/prometheus", X_OK) != 0) GTEST_SKIP() << "prometheus is not installed";
  LocalCluster c;
  ASSERT_TRUE(c.error.empty()) << c.error;
  std::string config = c.dir / "llmwatch.toml";
  write_file(config, "[llmwatch]\nstate_dir = \"" + (c.dir / "state") + "\"\ninterval = \"1s\"\n" +
                         "[[job]]\n" + job_owner() +
                         "name = \"itest-train\"\nseq_length = 8192\ngpus = 1\ngpu = \"H100\"\n" +
                         "model_flops_per_sample = 4.74e14\n");
  std::string work = c.dir / "work";
  std::filesystem::create_directories(work);
  ASSERT_TRUE(c.slurm({"sbatch", "--job-name=itest-train", "--chdir=" + work,
                       "--output=" + work + "/t-%j.out", "--export=ALL,FAKE_STEP_TIME=0.3",
                       source_dir() + "/examples/fake-trainer.sh"})
                  .ok());
  int port = free_port();
  std::string base = "http://127.0.0.1:" + std::to_string(port);
  BackgroundProcess daemon({llmwatch_bin(), "--config", config, "daemon", "--listen",
                            "127.0.0.1:" + std::to_string(port)},
                           c.dir / "daemon.log");
  std::string metrics;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = http_request("GET", base + "/metrics", "", {}, std::chrono::seconds(5));
        metrics = r.body;
        return r.ok() &&
               metrics.find("llmwatch_job_step{job=\"itest-train\"}") != std::string::npos &&
               metrics.find("llmwatch_job_tokens_per_second") != std::string::npos;
      },
      60))
      << metrics << read_file(daemon.log);
  EXPECT_EQ(http_request("GET", base + "/healthz", "", {}, std::chrono::seconds(5)).status, 200);
  EXPECT_EQ(http_request("GET", base + "/nope", "", {}, std::chrono::seconds(5)).status, 404);

  ProcessSpec check;
  check.argv = {"/usr/bin/promtool", "check", "metrics"};
  check.stdin_data = metrics;
  auto checked = run_process(check);
  EXPECT_TRUE(checked.ok()) << checked.out << checked.err;

  // A real Prometheus scrapes it.
  int prom_port = free_port();
  write_file(c.dir / "prometheus.yml",
             "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: llmwatch\n"
             "    static_configs:\n      - targets: ['127.0.0.1:" +
                 std::to_string(port) + "']\n");
  BackgroundProcess prometheus(
      {"/usr/bin/prometheus", "--config.file=" + (c.dir / "prometheus.yml"),
       "--storage.tsdb.path=" + (c.dir / "tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      c.dir / "prometheus.log");
  std::string answer;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = http_request("GET",
                              "http://127.0.0.1:" + std::to_string(prom_port) +
                                  "/api/v1/query?query=llmwatch_job_step",
                              "", {}, std::chrono::seconds(5));
        answer = r.body;
        auto j = nlohmann::json::parse(answer, nullptr, false);
        return j.is_object() && j.value("status", "") == "success" && !j["data"]["result"].empty();
      },
      90))
      << answer << read_file(c.dir / "prometheus.log").substr(0, 3000);
  EXPECT_NE(answer.find("itest-train"), std::string::npos);

  // The shipped rules are valid, and every llmwatch_ metric they or the dashboard use exists.
  ProcessSpec rules;
  rules.argv = {"/usr/bin/promtool", "check", "rules",
                source_dir() + "/examples/prometheus/alerts.yml"};
  auto rules_checked = run_process(rules);
  EXPECT_TRUE(rules_checked.ok()) << rules_checked.out << rules_checked.err;
  auto exported = metric_names(metrics);
  std::regex used(R"(llmwatch_[a-z_]+)");
  for (const char* file : {"/examples/prometheus/alerts.yml", "/examples/grafana/llmwatch.json"}) {
    std::string text = read_file(source_dir() + file);
    for (std::sregex_iterator it(text.begin(), text.end(), used), end; it != end; ++it)
      EXPECT_TRUE(exported.count(it->str()))
          << file << " uses " << it->str() << ", which llmwatch does not export";
  }
  auto dashboard = nlohmann::json::parse(
      read_file(source_dir() + "/examples/grafana/llmwatch.json"), nullptr, false);
  ASSERT_TRUE(dashboard.is_object());
  EXPECT_GE(dashboard["panels"].size(), 10u);
}

}  // namespace
}  // namespace llmwatch::testing
