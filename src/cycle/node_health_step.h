#pragma once
// The supervisor's node-health step: collects node-check verdicts for the nodes llmwatch
// manages (results directory and/or `srun --overlap` into watched jobs), remembers each node's
// health history, and turns verdicts into findings with explicit plans: drain a CRITICAL node
// (within max_drained_fraction and max_drains_per_hour), undrain what llmwatch drained once a
// fresh check passes, restart watched jobs off a faulty node, drain lemon nodes.
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/finding.h"
#include "rules/node_report.h"
#include "slurm/slurm_client.h"

namespace llmwatch {

class Store;

struct WatchedTask {
  std::string label;  // the [[job]]
  SlurmJob task;      // its running task
};

struct NodeStep {
  std::vector<Finding> findings;
  std::vector<std::string> scopes;                        // finding-key prefixes evaluated
  std::map<std::string, std::vector<std::string>> plans;  // finding key → actions (node findings)
  std::vector<std::string> bad_nodes;                     // never restart a job onto these
  int unknown = 0;                                        // nodes without a usable verdict
};

NodeStep node_health_step(const Config& config, SlurmClient& slurm, Store& store,
                          const SinfoParse& nodes, const std::vector<WatchedTask>& running,
                          double now);

// Reads DIR/<node>.json; nullopt (and *error) when missing or malformed.
std::optional<NodeReport> read_node_result(const std::string& dir, const std::string& node,
                                           std::string* error);

}  // namespace llmwatch
