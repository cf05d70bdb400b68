#include "policy/restart_exclusion.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

std::vector<Suspect> suspects(std::initializer_list<const char*> nodes) {
  std::vector<Suspect> out;
  for (const char* n : nodes) out.push_back({n, 0.5, {}});
  return out;
}

// The defect: a crash excluded every node of the run, so a 64-node run on a partition with
// 5% spare nodes could never be scheduled again. Only suspects go, and only as many as fit.
TEST(RestartExclusion, OnlySuspectsAndNeverMoreThanTheSpareNodes) {
  auto c = choose_exclusions(suspects({"node-2"}), 3);
  EXPECT_EQ(c.nodes, std::vector<std::string>{"node-2"});
  EXPECT_EQ(c.note, "");
  c = choose_exclusions(suspects({"a", "b", "c", "d"}), 2);
  EXPECT_EQ(c.nodes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.note, "not excluded (the run would no longer fit): c, d");
  c = choose_exclusions(suspects({"a"}), 0);
  EXPECT_TRUE(c.nodes.empty());
  c = choose_exclusions(suspects({"a", "b", "c"}), -1);
  EXPECT_EQ(c.nodes.size(), 2u);
  EXPECT_NE(c.note.find("partition size unknown"), std::string::npos);
  EXPECT_TRUE(choose_exclusions({}, 5).nodes.empty());
}

// A node the run cannot land on anyway (out of service, or excluded by its submitter) is
// excluded again at no cost: before, it took the room a usable suspect needed.
TEST(RestartExclusion, ANodeAvoidedAnywayTakesNoRoom) {
  auto c = choose_exclusions(suspects({"out", "a", "b"}), 1, {"out"});
  EXPECT_EQ(c.nodes, (std::vector<std::string>{"out", "a"}));
  EXPECT_EQ(c.note, "not excluded (the run would no longer fit): b");
}

}  // namespace
}  // namespace llmwatch
