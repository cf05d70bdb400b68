#pragma once
// Each managed node's history as its node-checks report it: an event per change of its verdict,
// the figures its [[check]]s report (judged against the fleet's), and what its GPUs did (the
// slow-node rule's evidence, rules/gpu_telemetry_series.h).
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "cycle/cycle_state.h"
#include "rules/node_findings.h"

namespace llmwatch {

class Store;

// The watched jobs' running tasks, and the nodes they run on.
std::vector<WatchedTask> running_tasks(const std::vector<JobWork>& work);
std::set<std::string> watched_nodes(const std::vector<WatchedTask>& running);

// Records every report in `facts` no older than `max_age`, in one transaction: at 16,384 nodes
// a commit per node's write took seconds a cycle. A node's GPU telemetry is kept only while a
// watched task runs on it (`facts.watched`): the slow-node rule compares a task's nodes' GPUs,
// and nothing else reads the series (31 KB a node of 8 GPUs).
void record_history(Store& store, const NodeFacts& facts, Seconds max_age);

}  // namespace llmwatch
