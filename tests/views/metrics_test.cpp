#include "views/metrics.h"

#include <gtest/gtest.h>

#include "store/goodput_ledger.h"
#include "store/keys.h"
#include "store/store.h"
#include "test_util.h"
#include "util/subprocess.h"

namespace llmwatch {
namespace {

void expect_valid_for_promtool(const std::string& text) {
  ProcessSpec promtool;
  promtool.argv = {"promtool", "check", "metrics"};
  promtool.stdin_data = text;
  auto r = run_process(promtool);
  if (!r.started) GTEST_SKIP() << "promtool is not installed";
  EXPECT_TRUE(r.ok()) << r.out << r.err;
}

// Node GPU health in the exposition: the last verdict per node and the nodes llmwatch drained,
// valid for promtool.
TEST(Metrics, NodeGpuHealthAndOwnDrains) {
  testing::TempDir dir;
  Store store(dir.path);
  store.put("nodehealth:node-2", "CRITICAL Xid 79 GPU 0: GPU has fallen off the bus", 1);
  store.put("nodehealth:node-1", "OK all checks passed", 1);
  store.put("drained:node-2", "1795323193", 1);
  store.put("drained:node-3", "", 1);  // returned to service
  Config config;
  std::string text = render_metrics(config, store, 2);
  EXPECT_NE(text.find("llmwatch_node_gpu_health{node=\"node-2\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("llmwatch_node_gpu_health{node=\"node-1\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("llmwatch_nodes_drained_by_llmwatch 1\n"), std::string::npos);
  expect_valid_for_promtool(text);
}

// The run lifecycle for dashboards: how tasks ended (by the post-mortem's class), the time
// lost, and the nodes the lemon ledger charges. Valid for promtool.
TEST(Metrics, TaskEndsByClassAndSuspectNodes) {
  testing::TempDir dir;
  Store store(dir.path);
  Config config;
  JobSettings job;
  job.name = "tr";
  config.jobs.push_back(job);
  double now = 1'800'000'000;
  store.add_event(now - 300, "ended", "tr", "warning", "task 7 ended: GPU error",
                  "{\"class\": \"gpu\", \"task\": \"7\"}");
  store.add_event(now - 200, "ended", "tr", "warning", "task 8 ended: GPU error",
                  "{\"class\": \"gpu\", \"task\": \"8\"}");
  store.add_event(now - 100, "ended", "tr", "warning", "task 9 ended: out of memory",
                  "{\"class\": \"oom\", \"task\": \"9\"}");
  store.add_event(now - 100, "incident", "node-2", "warning", "suspect in task 8");
  store.add_event(now - 50, "incident", "node-2", "warning", "suspect in task 7");
  std::string text = render_metrics(config, store, now);
  EXPECT_NE(text.find("llmwatch_job_ends{class=\"gpu\",job=\"tr\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("llmwatch_job_ends{class=\"oom\",job=\"tr\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("llmwatch_node_incidents{node=\"node-2\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE llmwatch_job_lost_seconds gauge"), std::string::npos);
  expect_valid_for_promtool(text);
}

// The per-node pace from per-rank timing (#28), as the record phase keeps it in the job view.
// The nodes that cost the most GPU-hours (#29's Grafana panel): one series per node the
// ledger charged, never the unattributed losses. Valid for promtool.
TEST(Metrics, NodesByLostGpuSecondsFromTheLedger) {
  testing::TempDir dir;
  Store store(dir.path);
  double now = 1'800'000'000;
  GoodputLedger ledger(store);
  ledger.add("llama", now,
             {{"rework", "GPU error", "node-17", 7200, "9@1799990000"},
              {"hang", "hang", "", 900, ""},
              {"idle end", "NCCL or network error", "node-3", 60, "8@1799980000"},
              {"productive", "", "", 99999, ""}});
  Config config;
  std::string text = render_metrics(config, store, now);
  EXPECT_NE(text.find("llmwatch_node_lost_gpu_seconds{node=\"node-17\"} 7200\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("llmwatch_node_lost_gpu_seconds{node=\"node-3\"} 60\n"), std::string::npos);
  EXPECT_EQ(text.find("no node named"), std::string::npos) << text;
  expect_valid_for_promtool(text);
}

TEST(Metrics, NodeRelativeSpeedPerJobNode) {
  testing::TempDir dir;
  Store store(dir.path);
  Config config;
  JobSettings job;
  job.name = "tr";
  config.jobs.push_back(job);
  double now = 1'800'000'000;
  store.put(kv::job_view("tr"),
            "{\"entries\":[],\"node_speeds\":[{\"node\":\"node-3\",\"relative\":0.71,"
            "\"suspect\":true},{\"node\":\"node-1\",\"relative\":1,\"suspect\":false}],"
            "\"nodes_judged\":12}",
            now);
  std::string text = render_metrics(config, store, now);
  EXPECT_NE(text.find("llmwatch_node_relative_speed{job=\"tr\",node=\"node-3\"} 0.71\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("llmwatch_node_relative_speed{job=\"tr\",node=\"node-1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("llmwatch_job_nodes_judged{job=\"tr\"} 12\n"), std::string::npos) << text;
  expect_valid_for_promtool(text);
}

}  // namespace
}  // namespace llmwatch
