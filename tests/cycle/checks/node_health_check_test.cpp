// Idle nodes checked as a short job of their own ([gpu] idle_check_every), through whole
// cycles of the real Supervisor against a FakeSlurm: a GPU that broke between jobs is found,
// and drained, before a job lands on it.
#include <gtest/gtest.h>

#include "cycle/supervisor.h"
#include "fake_slurm.h"
#include "rules/node_report.h"
#include "store/keys.h"
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
  explicit IdleNodes(const std::string& every = "1h", const std::string& extra = "",
                     const std::string& managed = "node-[1-4]") {
    auto loaded = load_config_string(
        "[llmwatch]\nstate_dir = \"" + dir / "state" +
            "\"\n[gpu]\nenabled = true\ncollect = \"results\"\nmanage_nodes = \"" + managed +
            "\"\nidle_check_every = \"" + every + "\"\n" + extra,
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
  static std::string report(const std::string& node, Verdict v, double ts,
                            std::map<std::string, double> figures = {}) {
    NodeReport r;
    r.node = node;
    r.ts = ts;
    r.verdict = v;
    r.figures = std::move(figures);
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

// Each idle node reports `figure`, node-6 at `node6` (× 500 the others'): the findings open after
// one cycle, then those after three hours of node-6 back at the fleet's pace. node-3 is
// allocated (not asked): its figure came from a check inside a job, and counts too.
struct FleetRun {
  std::vector<FindingRow> open, after;
  std::vector<std::string> controls;
};
FleetRun fleet_run(const std::string& extra, const std::string& figure, double node6) {
  IdleNodes w("1h", extra, "node-[1-6]");
  for (const char* name : {"node-5", "node-6"}) {
    SlurmNode n;
    n.name = name;
    n.state = "idle";
    n.partitions = {"gpu"};
    w.slurm.node_list.push_back(n);
  }
  auto fleet = [&](double six, double at) {
    std::string out;
    const double value[] = {498, 503, 0, 507, 495, six};
    for (int i = 1; i <= 6; ++i)
      if (i != 3)
        out += IdleNodes::report("node-" + std::to_string(i), Verdict::Ok, at,
                                 {{figure, value[i - 1]}});
    return out;
  };
  w.store->put(kv::node_figures("node-3"), R"({")" + figure + R"(": [501, 1800000000]})", w.now);
  w.slurm.step_output = fleet(node6, w.now);
  w.cycle(w.now);
  FleetRun out;
  out.open = w.store->firing();
  out.controls = w.slurm.controls;
  for (int hour = 1; hour <= 3; ++hour) {
    w.slurm.step_output = fleet(499, w.now + 3600 * hour);
    w.cycle(w.now + 3600 * hour);
  }
  out.after = w.store->firing();
  return out;
}

// A [[check]]'s figure (a GEMM's GFLOP/s as perfdata) on each idle node, judged against the
// fleet's: node-6 at 0.70× the median is a warning naming the figure, and nothing is drained;
// once its figure is back with the fleet's the finding resolves (after the findings' usual
// hysteresis of a cycle or two).
TEST(NodeHealthCheck, ANodesFigureFarUnderTheFleetMedianIsAWarning) {
  auto run = fleet_run(
      "[[check]]\nname = \"gemm\"\ncommand = [\"/bin/true\"]\nwhere = \"nodes\"\n"
      "fleet_compare = [\"gflops\"]\n",
      "gemm/gflops", 350);
  ASSERT_EQ(run.open.size(), 1u);
  EXPECT_EQ(run.open[0].key.rfind("node:node-6/fleet-slow", 0), 0u) << run.open[0].key;
  EXPECT_EQ(run.open[0].summary, "node-6: gemm/gflops 350, 0.70× the fleet median 500 (6 nodes)");
  EXPECT_TRUE(run.controls.empty()) << "a figure is told, never drained on";
  EXPECT_TRUE(run.after.empty());
}

// What dcgmi diag measured on each node (its GFLOP/s, stress level, PCIe bandwidth) is judged
// against the fleet the same way, with no [[check]] to name it: every such figure a node
// reported is a yardstick, unless dcgmi_fleet_below is 0.
TEST(NodeHealthCheck, ANodesDcgmiDiagFigureFarUnderTheFleetsIsAWarning) {
  auto run = fleet_run("", "dcgmi-diag/diagnostic/gflops", 350);
  ASSERT_EQ(run.open.size(), 1u);
  EXPECT_EQ(run.open[0].summary,
            "node-6: dcgmi-diag/diagnostic/gflops 350, 0.70× the fleet median 500 (6 nodes)");
  EXPECT_TRUE(run.controls.empty());
  EXPECT_TRUE(run.after.empty());
  EXPECT_TRUE(
      fleet_run("dcgmi_fleet_below = \"0%\"\n", "dcgmi-diag/diagnostic/gflops", 350).open.empty());
  // A [[check]]'s figure is judged only where its check asks for it.
  EXPECT_TRUE(fleet_run("", "gemm/gflops", 350).open.empty());
}

}  // namespace
}  // namespace llmwatch
