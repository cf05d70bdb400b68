#include "rules/attribution.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

TaskLayout three_nodes() {
  TaskLayout l;
  l.nodes = {"node-1", "node-2", "node-3"};
  return l;
}

// The crash: the rank on node-2 printed the NCCL WARN. Before, the restart excluded
// every node of the run (or, on absence, none): now node-2 alone is the suspect.
TEST(Attribution, TheHostThatPrintedAnNcclWarning) {
  auto s = attribute_crash({"node-2:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer "
                            "10.11.0.2 with error 12, opcode 0, len 0, vendor err 129",
                            "torch.distributed.DistBackendError: NCCL error"},
                           three_nodes(), {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].node, "node-2");
  EXPECT_NEAR(s[0].confidence, 0.4, 1e-9);
  EXPECT_NE(s[0].why[0].find("printed: node-2:48211"), std::string::npos);
}

TEST(Attribution, APeerAddressMapsToItsNodeAndTheReporterIsNotBlamed) {
  TaskLayout l = three_nodes();
  l.address_to_node = {{"10.11.0.3", "node-3"}, {"10.11.0.2", "node-2"}};
  auto s = attribute_crash({"node-1:11:12 [0] NCCL WARN NET/IB : Got completion from peer "
                            "10.11.0.3<52313> with error 12"},
                           l, {});
  // The peer (0.6) is named; node-1 only printed it (#26.2: it was charged 0.4 and excluded).
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].node, "node-3");
}

// The trigger: two nodes report the same failed peer. Only the peer is a suspect; with
// no peer known, the reporter is all the evidence there is and stays one.
TEST(Attribution, ReportersOfOnePeerFallBelowTheThreshold) {
  TaskLayout l = three_nodes();
  l.address_to_node = {{"10.11.0.2", "node-2"}};
  std::vector<std::string> lines = {
      "node-1:11:12 [0] NCCL WARN NET/IB : Got completion from peer 10.11.0.2<52313> with error 12",
      "node-3:31:32 [4] NCCL WARN NET/IB : Got completion from peer 10.11.0.2<52313> with error "
      "12"};
  auto s = attribute_crash(lines, l, {});
  ASSERT_EQ(s.size(), 1u) << describe_suspects(s);
  EXPECT_EQ(s[0].node, "node-2");
  // Slurm names node-3 down: node-1's report is no evidence against node-1.
  s = attribute_crash({lines[0].substr(0, lines[0].find(" from peer")) + " from peer ?"}, l,
                      {{"node-3", "Slurm shows it down"}});
  ASSERT_EQ(s.size(), 1u) << describe_suspects(s);
  EXPECT_EQ(s[0].node, "node-3");
  // Nobody named: the reporter stays the suspect (a bad NIC is most often the reporter's own).
  s = attribute_crash({"node-1:11:12 [0] NCCL WARN NET/IB : Got completion from peer "
                       "10.99.0.9<52313> with error 12"},
                      l, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].node, "node-1");
  // Two nodes report the same peer no node is known by (no NodeAddr, or one outside the run):
  // the peer is the common factor, not either reporter.
  s = attribute_crash({"node-1:11:12 [0] NCCL WARN NET/IB : Got completion from peer "
                       "10.99.0.9<52313> with error 12",
                       "node-3:31:32 [4] NCCL WARN NET/IB : Got completion from peer "
                       "10.99.0.9<52313> with error 12"},
                      l, {});
  EXPECT_TRUE(s.empty()) << describe_suspects(s);
}

TEST(Attribution, RanksMapThroughTheLayoutAndRepeatsCountOnce) {
  TaskLayout l = three_nodes();
  l.ranks_per_node = 8;
  std::string line = "[rank17]:RuntimeError: CUDA error: uncorrectable ECC error encountered";
  auto s = attribute_crash({line, line, line}, l, {});
  // One weak line (0.3) is below the threshold: no node is excluded on it alone...
  EXPECT_TRUE(s.empty());
  // ...but with Slurm showing that node down, it is the suspect.
  s = attribute_crash({line}, l, {{"node-3", "Slurm shows it down*+DRAIN"}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].node, "node-3");
  EXPECT_NEAR(s[0].confidence, 1 - 0.1 * 0.7, 1e-9);
  EXPECT_EQ(s[0].why.size(), 2u);
}

// A watchdog timeout is printed by the victims (every healthy rank waits for the faulty
// one): the real capture blames nobody.
TEST(Attribution, WatchdogTimeoutsBlameNobody) {
  TaskLayout l;
  for (int i = 0; i < 64; ++i) l.nodes.push_back("node-" + std::to_string(i));
  l.ranks_per_node = 8;
  auto lines =
      split(testing::read_file(testing::fixture("training-logs/nccl-watchdog-timeout.log")), '\n');
  EXPECT_TRUE(attribute_crash(lines, l, {}).empty());
}

TEST(Attribution, OnlyTheTasksNodesAndNothingFromOrdinaryLines) {
  auto s = attribute_crash({"gpu-77:1:2 [0] NCCL WARN socket closed", "step 5 loss 2.1 10.0.0.1"},
                           three_nodes(), {{"node-9", "down"}});
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(describe_suspects({{"node-2", 0.4, {}}, {"node-3", 0.91, {}}}),
            "node-2 (0.40), node-3 (0.91)");
}

}  // namespace
}  // namespace llmwatch
