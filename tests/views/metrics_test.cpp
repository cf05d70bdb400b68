#include "views/metrics.h"

#include <gtest/gtest.h>

#include "store/store.h"
#include "test_util.h"
#include "util/subprocess.h"

namespace llmwatch {
namespace {

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
  ProcessSpec promtool;
  promtool.argv = {"promtool", "check", "metrics"};
  promtool.stdin_data = text;
  auto r = run_process(promtool);
  if (!r.started) GTEST_SKIP() << "promtool is not installed";
  EXPECT_TRUE(r.ok()) << r.out << r.err;
}

}  // namespace
}  // namespace llmwatch
