#pragma once
// A run Slurm could not start. When a batch launch fails on a node, Slurm requeues the job
// held: "launch failed requeued held". The run then waits for a person, however long that
// takes; at night, hours of a whole allocation (#30: lose less per interruption). Where its
// prolog failed, Slurm drained that node too, and releasing the job starts it elsewhere. Where
// slurmd could not set the job up (a spool directory it could not write), Slurm may leave the
// node in service, and a release could land there again: only told. So is a job that must run
// on nodes that are out, and one whose last release failed too: two nodes in a row point at the
// job (its owner's environment, its script's directory), not at the nodes, and each further
// release would only let Slurm drain one more. Pure.
#include <cstdint>
#include <string>
#include <vector>

#include "rules/finding.h"
#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"

namespace llmwatch {

// Slurm's own drain reasons for a node a batch launch failed on: "Prolog error" (slurmd),
// "batch job complete failure" (slurmctld), and "Duplicate jobid" (slurmctld: the node still
// had a job of that id; the chaos soak met it after a slurmctld outage).
bool is_launch_failure_reason(const std::string& reason);

// A node Slurm drained for a failed launch: its name, reason and when (0: not said).
struct LaunchFailedNode {
  std::string name, reason;
  std::int64_t at = 0;
};

// Whether the failure is charged to the node as an incident (the lemon rule's ledger): a
// prolog that fails there is the node's; "Duplicate jobid" is Slurm's own confusion after an
// outage, not the node's fault.
bool charges_the_node(const LaunchFailedNode& node);

// The first of a watched job's queue entries that Slurm holds after a failed launch, or null.
const SlurmJob* launch_failed_entry(const std::vector<SlurmJob>& entries);
SlurmJob* launch_failed_entry(std::vector<SlurmJob>& entries);

// How long before a held task's submit time its node's drain may be (a requeue sets the
// submit time just after the drain); a reason set earlier is another failure's.
inline constexpr std::int64_t kLaunchDrainBefore = 60;

// The nodes Slurm took out for `task`'s failed launch: drained with a launch-failure reason no
// earlier than kLaunchDrainBefore before its submit time. A reason without a time (text
// sinfo) counts: its words are Slurm's.
std::vector<LaunchFailedNode> launch_failure_nodes(const std::vector<SlurmNode>& nodes,
                                                   const SlurmJob& task);

// What is known of a held task beside the queue entry.
struct LaunchFailureContext {
  bool nodes_known = true;                // sinfo answered this cycle
  std::vector<LaunchFailedNode> drained;  // launch_failure_nodes
  std::vector<std::string> required_out;  // nodes it must run on that are out of service
  bool released_before = false;           // llmwatch released it within the hour before
};

// The finding's cause when releasing the task would start it elsewhere (the policy runs
// on_launch_failed then; else only an alert).
inline constexpr const char* kRelaunchable = "relaunchable";

// "launch-failed", critical, an episode per failure (a requeue sets the submit time).
Finding launch_failed_finding(const std::string& label, const SlurmJob& task,
                              const LaunchFailureContext& context);

}  // namespace llmwatch
