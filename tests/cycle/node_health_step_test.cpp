// The node step against a results directory and a sinfo snapshot; no cluster needed.
#include "cycle/node_health_step.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

// The defect: max_drained_fraction was checked against the snapshot taken at the start of
// the cycle, so 4 of 10 nodes were drained in one cycle under a 10% cap.
TEST(NodeHealthStep, DrainsPlannedInOneCycleCountAgainstTheFraction) {
  testing::TempDir dir;
  Store store(dir / "state");
  double now = 1'800'000'000;
  Config config;
  config.gpu.enabled = true;
  config.gpu.results_dir = dir.path;
  config.gpu.manage_nodes = "n[1-10]";
  config.gpu.max_drained_fraction = 0.1;
  SinfoParse sinfo;
  for (int i = 1; i <= 10; ++i) {
    SlurmNode n;
    n.name = "n" + std::to_string(i);
    n.state = "idle";
    n.partitions = {"gpu"};
    sinfo.nodes.push_back(n);
  }
  for (int i = 1; i <= 4; ++i) {
    NodeReport r;
    r.node = "n" + std::to_string(i);
    r.ts = now;
    r.verdict = Verdict::Critical;
    r.gpus[0] = Verdict::Critical;
    r.items.push_back({"xid", 0, Verdict::Critical, "drain", "Xid 79 GPU 0: fallen off", {}});
    testing::write_file(dir / (r.node + ".json"), r.to_json());
  }
  SlurmSettings no_slurm;
  no_slurm.bin_dir = "/nonexistent";
  SlurmClient slurm(no_slurm);
  NodeStep step = node_health_step(config, slurm, store, sinfo, {}, now);
  int drains = 0, blocked = 0;
  for (const auto& [key, plan] : step.plans)
    drains += std::count(plan.begin(), plan.end(), "drain");
  for (const auto& f : step.findings)
    for (const auto& e : f.evidence)
      blocked += e.rfind("not drained: max_drained_fraction", 0) == 0;
  EXPECT_EQ(drains, 1);  // 10% of 10 nodes
  EXPECT_EQ(blocked, 3);
}

}  // namespace
}  // namespace llmwatch
