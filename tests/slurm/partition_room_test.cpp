// The room a restart has in its partition, and what a task keeps off by itself (#30: "never so
// many that the run no longer fits its partition").
#include "slurm/partition_room.h"

#include <gtest/gtest.h>

#include "fake_slurm.h"

namespace llmwatch {
namespace {

SlurmNode node(const std::string& name, const std::string& partition, bool drained = false) {
  SlurmNode n;
  n.name = name;
  n.state = "idle";
  if (drained) n.flags = {"DRAIN"};
  n.partitions = {partition};
  return n;
}

SlurmJob three_nodes(std::optional<std::string> excluded) {
  SlurmJob j;
  j.job_id = 7;
  j.partition = "gpu";
  j.node_count = 3;
  j.excluded_nodes = std::move(excluded);
  return j;
}

// Only what the task could have used counts: a node it excludes that is out anyway, or in another
// partition, took no room; a list nobody said subtracts nothing.
TEST(PartitionRoom, TheTasksOwnExclusionsAreNoRoom) {
  std::vector<SlurmNode> nodes;
  for (int i = 1; i <= 6; ++i) nodes.push_back(node("node-" + std::to_string(i), "gpu", i == 1));
  nodes.push_back(node("cpu-1", "cpu"));
  EXPECT_EQ(spare_nodes(nodes, three_nodes("")), 2);            // 5 usable, 3 needed
  EXPECT_EQ(spare_nodes(nodes, three_nodes("node-[5-6]")), 0);  // 3 usable left
  EXPECT_EQ(spare_nodes(nodes, three_nodes("node-[1,6],cpu-1")), 1);
  EXPECT_EQ(spare_nodes(nodes, three_nodes(std::nullopt)), 2);
  EXPECT_EQ(spare_nodes(nodes, three_nodes("node-[2-6]")), 0) << "never below none";
  EXPECT_EQ(spare_nodes(5, nodes, three_nodes("node-6")), 1) << "counted once a cycle";
  SlurmJob unsized = three_nodes("");
  unsized.node_count = 0;
  EXPECT_EQ(spare_nodes(nodes, unsized), -1);
}

// squeue --json says what a task excludes: nothing is asked. Its text does not: scontrol is, for
// the task alone; "(null)" is none; an array's pending remainder is shown under the array's id,
// and a record of another of its tasks is not its own.
TEST(PartitionRoom, WhatATaskExcludesItselfIsAskedOnlyWhereSqueueDoesNotSay) {
  testing::FakeSlurm slurm;
  std::vector<std::string> asked;
  slurm.on_show_job = [&](const std::string& id) { asked.push_back(id); };
  EXPECT_EQ(own_excluded_nodes(three_nodes("node-4"), slurm), "node-4");
  EXPECT_TRUE(asked.empty());
  slurm.shown_jobs["7"] = {{"ExcNodeList", "node-[4-5]"}};
  EXPECT_EQ(own_excluded_nodes(three_nodes(std::nullopt), slurm), "node-[4-5]");
  slurm.shown_jobs["7"] = {{"ExcNodeList", "(null)"}};
  EXPECT_EQ(own_excluded_nodes(three_nodes(std::nullopt), slurm), "");
  slurm.shown_jobs.clear();
  EXPECT_EQ(own_excluded_nodes(three_nodes(std::nullopt), slurm), std::nullopt) << "forgotten";
  SlurmJob remainder = three_nodes(std::nullopt);
  remainder.array_job_id = 7;
  remainder.array_task_string = "2-9%1";
  slurm.shown_jobs["7"] = {{"ArrayTaskId", "1"}, {"ExcNodeList", "node-1"}};
  EXPECT_EQ(own_excluded_nodes(remainder, slurm), std::nullopt) << "task 1's, not the remainder's";
  slurm.shown_jobs["7"] = {{"ArrayTaskId", "2-9%1"}, {"ExcNodeList", "node-1"}};
  EXPECT_EQ(own_excluded_nodes(remainder, slurm), "node-1");
  EXPECT_EQ(asked, std::vector<std::string>(5, "7"));
}

}  // namespace
}  // namespace llmwatch
