// Idle nodes checked as a short job of their own ([gpu] idle_check_every), through whole
// cycles of the real Supervisor against a FakeSlurm: a GPU that broke between jobs is found,
// and drained, before a job lands on it.
#include <gtest/gtest.h>

#include "cycle/supervisor.h"
#include "fake_slurm.h"
#include "rules/node_report.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct IdleNodes {
  testing::TempDir dir;
  testing::FakeSlurm slurm;
  Config config;
  std::unique_ptr<Store> store;
  double now = 1'800'000'000;
  explicit IdleNodes(const std::string& every = "1h") {
    auto loaded = load_config_string(
        "[llmwatch]\nstate_dir = \"" + dir / "state" +
            "\"\n[gpu]\nenabled = true\ncollect = \"results\"\nmanage_nodes = \"node-[1-4]\"\n"
            "idle_check_every = \"" +
            every + "\"\n",
        "test.toml");
    if (!loaded.config) throw std::runtime_error(loaded.errors.front().str());
    config = *loaded.config;
    store = std::make_unique<Store>(config.state_dir);
    for (auto [name, state] : {std::pair{"node-1", "idle"},
                               {"node-2", "idle"},
                               {"node-3", "allocated"},
                               {"node-4", "IDLE"},     // as sinfo --json prints it from 23.02
                               {"node-9", "idle"}}) {  // node-9 is not llmwatch's to touch
      SlurmNode n;
      n.name = name;
      n.state = state;
      n.partitions = {"gpu"};
      slurm.node_list.push_back(n);
      slurm.shown_nodes[name] = {{"NodeName", name}, {"State", "IDLE"}};
    }
  }
  static std::string report(const std::string& node, Verdict v, double ts) {
    NodeReport r;
    r.node = node;
    r.ts = ts;
    r.verdict = v;
    if (v != Verdict::Ok)
      r.items.push_back({"xid", 2, v, "drain", "Xid 79 GPU 2: fell off the bus", {}});
    return r.to_json() + "\n";
  }
  void cycle(double at) {
    store->put("clock", "", at);  // time is stepped by hand here, not a clock jump
    Supervisor(config, *store, slurm).run_cycle(at);
  }
  std::string step(size_t i) {
    std::string out;
    for (const auto& a : slurm.steps.at(i)) out += a + " ";
    return out;
  }
};

TEST(NodeHealthCheck, IdleManagedNodesAreCheckedAsAShortJobAndAFaultyOneIsDrained) {
  IdleNodes w;
  w.slurm.step_output = IdleNodes::report("node-1", Verdict::Ok, w.now) +
                        IdleNodes::report("node-2", Verdict::Critical, w.now) +
                        IdleNodes::report("node-4", Verdict::Ok, w.now);
  w.cycle(w.now);
  ASSERT_EQ(w.slurm.steps.size(), 1u);
  std::string step = w.step(0);
  EXPECT_NE(step.find("--nodelist=node-[1-2,4] "), std::string::npos) << step;
  EXPECT_NE(step.find("--partition=gpu "), std::string::npos) << step;
  EXPECT_NE(step.find("--immediate=30 "), std::string::npos) << step;
  EXPECT_NE(step.find("node-check --json"), std::string::npos) << step;
  EXPECT_EQ(w.slurm.controls.size(), 1u);
  ASSERT_FALSE(w.slurm.controls.empty());
  EXPECT_EQ(w.slurm.controls[0], "update node-2 drain");
  // Within the period nobody is asked again; after it, they are.
  w.cycle(w.now + 60);
  EXPECT_EQ(w.slurm.steps.size(), 1u);
  w.cycle(w.now + 3601);
  EXPECT_EQ(w.slurm.steps.size(), 2u);
}

TEST(NodeHealthCheck, NoIdleCheckUnlessAskedFor) {
  IdleNodes w("0s");
  w.cycle(w.now);
  EXPECT_TRUE(w.slurm.steps.empty());
}

}  // namespace
}  // namespace llmwatch
