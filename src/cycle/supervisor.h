#pragma once
// One supervision cycle: probes observe (concurrently, each with its deadline), rules make
// findings, the policy decides, actions act (journaled), the store records, and the
// heartbeat and metrics are written. The data only flows forward.
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "rules/finding.h"
#include "slurm/slurm_client.h"
#include "util/units.h"

namespace llmwatch {

class Store;

struct ProbeStat {
  std::string name;  // squeue, sinfo, log:<job>
  bool ok = true;
  double seconds = 0;
};

struct CycleResult {
  double started = 0, finished = 0;
  std::vector<ProbeStat> probes;
  std::vector<Finding> findings;
  int new_findings = 0, resolved = 0;
  int actions = 0, unknown_probes = 0;
  // Actions that wait on something and go on in a later cycle (a restart waiting for the task's
  // end): the daemon looks again sooner (app/cmd_run.cpp), not a whole interval later.
  int waiting = 0;
  std::vector<std::string> awaited;  // the running tasks whose end they wait for
  std::uint64_t log_bytes = 0;       // read from training logs this cycle
};

// Asked before every action and before alerts are sent: "" while this supervisor may still
// act, otherwise why not (the lease was taken over or expired, the cycle's deadline passed).
// Once it says no, nothing more is done this cycle; what was observed is still recorded.
// An empty Fence always allows (tests, the manual verbs that hold no lease).
using Fence = std::function<std::string()>;

class Supervisor {
 public:
  Supervisor(const Config& config, Store& store, SlurmClient& slurm, Fence fence = {})
      : config_(config), store_(store), slurm_(slurm), fence_(std::move(fence)) {}
  CycleResult run_cycle(double now);

 private:
  const Config& config_;
  Store& store_;
  SlurmClient& slurm_;
  Fence fence_;
};

}  // namespace llmwatch
