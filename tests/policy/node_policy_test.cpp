#include "policy/node_policy.h"

#include <gtest/gtest.h>

using namespace llmwatch;

namespace {
SlurmNode node(const std::string& name, bool drained, const std::string& partition,
               const std::string& reason = "") {
  SlurmNode n;
  n.name = name;
  n.state = "idle";
  if (drained) n.flags.push_back("DRAIN");
  n.reason = reason;
  n.partitions = {partition};
  return n;
}
}  // namespace

TEST(NodePolicy, FractionPerPartition) {
  std::vector<SlurmNode> nodes;
  for (int i = 1; i <= 10; ++i) nodes.push_back(node("a" + std::to_string(i), false, "gpu"));
  nodes.push_back(node("b1", true, "debug"));
  EXPECT_EQ(drain_blocked("a1", nodes, 0.2), "");
  nodes[1].flags.push_back("DRAIN");
  EXPECT_EQ(drain_blocked("a1", nodes, 0.2), "");  // 2 of 10 = 20%
  nodes[2].flags.push_back("DRAIN");
  EXPECT_NE(drain_blocked("a1", nodes, 0.2).find("partition gpu"), std::string::npos);
  // Redraining a node already out of service is not an extra one.
  EXPECT_EQ(drain_blocked("a2", nodes, 0.3), "");
  // At least one node of a small partition may go.
  std::vector<SlurmNode> four = {node("n1", false, ""), node("n2", false, ""),
                                 node("n3", false, ""), node("n4", false, "")};
  for (auto& n : four) n.partitions.clear();
  EXPECT_EQ(drain_blocked("n2", four, 0.1), "");
  four[0].flags.push_back("DRAIN");
  EXPECT_NE(drain_blocked("n2", four, 0.1).find("the cluster"), std::string::npos);
}

TEST(NodePolicy, UndrainOnlyOwnReasonOrKillTaskFailed) {
  EXPECT_TRUE(undrain_allowed(node("n", true, "p", "llmwatch: Xid 79 GPU 3"), false));
  EXPECT_FALSE(undrain_allowed(node("n", true, "p", "bad DIMM - ticket 123"), true));
  EXPECT_FALSE(undrain_allowed(node("n", true, "p", "Kill task failed"), false));
  EXPECT_TRUE(undrain_allowed(node("n", true, "p", "Kill task failed"), true));
  EXPECT_FALSE(undrain_allowed(node("n", false, "p", "llmwatch: x"), false));  // not drained
}

TEST(NodePolicy, WhoseReasonItIs) {
  EXPECT_EQ(reason_by(""), ReasonBy::Nobody);
  EXPECT_EQ(reason_by("(null)"), ReasonBy::Nobody);
  EXPECT_EQ(reason_by("none"), ReasonBy::Nobody);
  EXPECT_EQ(reason_by("llmwatch: Xid 79 GPU 3"), ReasonBy::Llmwatch);
  EXPECT_EQ(reason_by("bad DIMM - ticket 123"), ReasonBy::Someone);
  EXPECT_EQ(reason_by(" llmwatch: spoofed?"), ReasonBy::Someone);  // a prefix, not a substring
}
