#pragma once
// Everything one cycle knows, passed from phase to phase: the checks fill the observations
// and findings, the act phase reads them, the record and notify phases write them down.
// Nothing here outlives the cycle; what must survive goes to the store in the record phase.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "cycle/supervisor.h"
#include "policy/eviction_cost.h"
#include "probes/checkpoints.h"
#include "rules/clock_rule.h"
#include "rules/finding.h"
#include "rules/job_rules.h"
#include "rules/post_mortem.h"
#include "rules/queued_restart.h"
#include "rules/straggler.h"
#include "slurm/slurm_client.h"
#include "util/time_budget.h"

namespace llmwatch {

class Store;

// One watched job this cycle, filled by the job-log check.
struct JobWork {
  const JobSettings* settings = nullptr;
  std::string label;
  JobObservation obs;
  JobProgress progress;
  std::vector<std::pair<std::int64_t, double>> advances;
  std::uint64_t bytes = 0;
  std::optional<SlurmJob> last;  // the last run seen, for restarting a job that is gone
  // The run's end, once its last task is gone: Slurm's final entry while squeue still lists
  // it, and the post-mortem (loaded from the store, or made this cycle: ended_new).
  std::optional<SlurmJob> final_entry;
  std::optional<PostMortem> ended;
  bool ended_new = false;
  bool ended_updated = false;          // a stored post-mortem completed this cycle (its node-check)
  bool cancelled_by_llmwatch = false;  // the journal holds a cancel of the last task
  // The last task ended unseen and another one of the run runs in its place (a restart queued
  // behind it, an array's next task): it gets its post-mortem all the same, with its own
  // nodes' troubles.
  bool last_replaced = false;
  std::vector<NodeTrouble> last_troubles;
  // ...of the task the progress follows, when a new task replaced it between two looks.
  bool replaced_cancelled = false;
  // The task's nodes that Slurm shows out of service, and those a node-check in the dying task
  // found CRITICAL (dying_checked: that check spoke for every node of the task).
  std::vector<NodeTrouble> troubles;
  bool dying_checked = false;
  int spare_nodes = -1;  // usable nodes of its partition beyond its size; -1 unknown
  // Slow-node localisation (#28): the ranks' timing as read this cycle ([[job]] timing_dir),
  // the suspect it names, and whether evicting it pays (the cost sum, for on_straggler).
  std::optional<RankTimingRead> timing;
  // The verdict whose `speeds_shown` slowest nodes (at most 8, those slower than jitter) the
  // views and metrics show:
  // shared with the kept verdict, not copied (8,000 node records a cycle at 1,000 jobs).
  std::shared_ptr<const StragglerVerdict> speeds;
  std::size_t speeds_shown = 0;
  std::optional<NodeSpeed> straggler;
  std::optional<EvictionVerdict> eviction;
  // The restart llmwatch queued behind a dying task of the run, read while a job of the run
  // waits on a dependency (rules/queued_restart.h).
  std::optional<QueuedRestart> queued_restart;
};

struct CycleState {
  CycleState(const Config& c, Store& st, SlurmClient& sl, double n)
      : config(c),
        store(st),
        slurm(sl),
        now(n),
        remote(std::chrono::milliseconds(c.cycle_deadline) * 3 / 4) {}
  const Config& config;
  Store& store;
  SlurmClient& slurm;
  const double now;
  Fence fence;  // may this supervisor still act? (the lease, the cycle deadline)
  // The time this cycle's work on other machines may take, all of it together (node-checks
  // by srun, stack dumps): three quarters of cycle_deadline, the rest left for acting on and
  // recording what was found. What does not fit is unknown this cycle, done the next.
  TimeBudget remote;

  // "" while acting is allowed; the first refusal is kept, so every later step sees it.
  const std::string& fenced() {
    if (fenced_reason.empty() && fence) fenced_reason = fence();
    return fenced_reason;
  }
  std::string fenced_reason;

  CycleResult result;
  std::vector<Finding> findings;
  std::vector<std::string> scopes;  // finding-key prefixes that were fully evaluated

  // Observations, each written by one check.
  std::optional<SqueueParse> queue;  // nullopt: not asked (the check failed)
  std::optional<SinfoParse> nodes;
  std::vector<std::string> unusable;  // nodes a restarted run must avoid
  int slurm_failures = 0;             // cycles in a row without an answer from squeue
  ClockVerdict clock;                 // can idle time be measured this cycle?
  ClockReading clock_reading;         // this cycle's, kept for the next
  std::vector<JobWork> work;
  // The plans of node findings (policy/node_policy.h), by finding key.
  std::map<std::string, std::vector<std::string>> node_plans;
  std::vector<std::pair<std::string, std::string>> snapshots;  // store key → JSON, for views
  // Checkpoint directories whose old checkpoints the act phase may delete.
  struct Cleanup {
    const StorageSettings* settings;
    CheckpointScan scan;
  };
  std::vector<Cleanup> cleanups;
  // llmwatch's own pending chain jobs, when the self-chain check found none or several: what
  // the successor action mends.
  std::vector<SlurmJob> self_pending;
  // Findings an action of the act phase disproved (a hang whose stacks moved): the record
  // phase resolves them at once.
  std::vector<std::string> disproved;
  // What failed inside a phase's failure domains this cycle (logged, kept as events).
  std::vector<std::string> errors;

  bool queue_ok() const { return queue && queue->ok(); }
  bool nodes_ok() const { return nodes && nodes->ok(); }
};

}  // namespace llmwatch
