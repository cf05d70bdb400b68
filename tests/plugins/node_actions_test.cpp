// The node actions against a fake Slurm: whose reason it is decides, and the budgets are shared
// by every action that takes a node out.
#include <gtest/gtest.h>

#include "cycle/executor.h"
#include "fake_slurm.h"
#include "registry.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

struct NodeWorld {
  testing::TempDir dir;
  Store store{dir.path};
  Config config;
  testing::FakeSlurm slurm;
  ActionRequest request(const std::string& node) {
    ActionRequest r;
    r.job = node;
    r.finding = make_finding("node:" + node, node, "gpu-fault", Severity::Critical,
                             "Xid 94 GPU 3: contained ECC error");
    r.finding.key = "node:" + node + "/gpu";
    r.episode = 1;
    return r;
  }
  ActionOutcome run(const std::string& action, const std::string& node) {
    ActionContext ctx{config, slurm, store, 1000};
    return find_action(action)->execute(request(node), ctx);
  }
};

TEST(RebootAction, RebootsASAPWithOurReasonAndResumesByItself) {
  NodeWorld w;
  w.slurm.shown_nodes["n1"] = {{"Reason", "(null)"}};
  auto out = w.run("reboot", "n1");
  EXPECT_EQ(out.state, ActionState::Done) << out.detail;
  ASSERT_EQ(w.slurm.controls.size(), 1u);
  EXPECT_EQ(w.slurm.controls[0], "reboot n1 llmwatch: Xid 94 GPU 3: contained ECC error");
  EXPECT_EQ(w.store.get("drained:n1").value_or(""), "1000.000000");  // ours until it is back
}

TEST(RebootAction, ANodeSomeoneElseDrainedIsLeftAlone) {
  NodeWorld w;
  w.slurm.shown_nodes["n1"] = {{"Reason", "bad DIMM - ticket 123"}};
  auto out = w.run("reboot", "n1");
  EXPECT_EQ(out.state, ActionState::Skipped);
  EXPECT_TRUE(w.slurm.controls.empty());
  EXPECT_EQ(w.run("reboot", "unknown-node").state, ActionState::Failed);  // Slurm forgot it
}

// Without RebootProgram Slurm refuses the reboot (as the local cluster does: "scontrol: error:
// RebootProgram isn't defined"): the faulty node is drained instead, never left in service.
TEST(RebootAction, ARefusedRebootDrainsInstead) {
  NodeWorld w;
  w.slurm.shown_nodes["n1"] = {{"Reason", "(null)"}};
  w.slurm.reboot_error =
      "scontrol reboot ASAP n1: exit 1: scontrol: error: RebootProgram isn't defined";
  auto out = w.run("reboot", "n1");
  EXPECT_EQ(out.state, ActionState::Done) << out.detail;
  EXPECT_NE(out.detail.find("RebootProgram isn't defined"), std::string::npos) << out.detail;
  ASSERT_EQ(w.slurm.controls.size(), 1u);
  EXPECT_EQ(w.slurm.controls[0], "update n1 drain");
  EXPECT_FALSE(w.store.get("drained:n1").value_or("").empty());
}

// A reboot ASAP takes the node out as a drain does: both count against max_drains_per_hour.
TEST(NodeBudgets, RebootsAndDrainsShareTheHourlyDrainBudget) {
  NodeWorld w;
  w.config.limits.max_drains_per_hour = 2;
  for (const char* n : {"n1", "n2", "n3"}) w.slurm.shown_nodes[n] = {{"Reason", "(null)"}};
  Executor exec(w.config, w.store, w.slurm, 1000);
  exec.run_plan(w.request("n1"), {"drain"});
  exec.run_plan(w.request("n2"), {"reboot"});
  exec.run_plan(w.request("n3"), {"reboot"});
  auto actions = w.store.recent_actions(10);
  ASSERT_EQ(actions.size(), 3u);
  int skipped = 0;
  for (const auto& a : actions)
    if (a.state == "skipped") {
      ++skipped;
      EXPECT_EQ(a.subject, "n3");
      EXPECT_NE(a.detail.find("max_drains_per_hour (2) reached"), std::string::npos) << a.detail;
    }
  EXPECT_EQ(skipped, 1);
}

}  // namespace
}  // namespace llmwatch
