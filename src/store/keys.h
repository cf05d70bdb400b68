#pragma once
// Every key of the store's key-value table, in one place. Who writes a key and who reads it is
// a search for its function here; nothing spells a key's text anywhere else.
#include <string>

namespace llmwatch::kv {

// Per watched job (its [[job]] label): each prefix spelled once, here, and listed in
// kJobKeyPrefixes, which Store::forget_jobs removes once a [[job]] has left the config for
// keep_history.
inline constexpr const char* kProgressPrefix = "progress:";
inline constexpr const char* kProgressColdPrefix = "progress.cold:";
inline constexpr const char* kLastJobPrefix = "lastjob:";
inline constexpr const char* kGoodputPrefix = "goodput:";
inline constexpr const char* kPostMortemPrefix = "postmortem:";
// The key's name predates the rank lines.
inline constexpr const char* kLogRankTimesPrefix = "megatron-timers:";
inline constexpr const char* kJobViewPrefix = "jobview:";
inline constexpr const char* kNearMissPrefix = "nearmiss:";
inline constexpr const char* kStacksPrefix = "stacks:";
inline constexpr const char* kHangConfirmPrefix = "hangconfirm:";
inline constexpr const char* kSaveRequestedPrefix = "save.requested:";
inline constexpr const char* kAllocationCheckedPrefix = "alloccheck:";
inline constexpr const char* kQueuedRestartPrefix = "queuedrestart:";
inline constexpr const char* kKeptScriptPrefix = "script:";
inline constexpr const char* kJobKeyPrefixes[] = {
    kProgressPrefix,      kProgressColdPrefix, kLastJobPrefix,       kGoodputPrefix,
    kPostMortemPrefix,    kLogRankTimesPrefix, kJobViewPrefix,       kNearMissPrefix,
    kStacksPrefix,        kHangConfirmPrefix,  kSaveRequestedPrefix, kAllocationCheckedPrefix,
    kQueuedRestartPrefix, kKeptScriptPrefix};

inline std::string progress(const std::string& job) {
  return kProgressPrefix + job;
}  // JobProgress (its hot part)
inline std::string progress_cold(const std::string& job) {
  return kProgressColdPrefix + job;
}  // JobProgress's baselines and evidence lines
inline std::string last_job(const std::string& job) {
  return kLastJobPrefix + job;
}  // last task seen
inline std::string goodput(const std::string& job) {
  return kGoodputPrefix + job;
}  // GoodputState: the goodput accountant's place in the run
inline std::string post_mortem(const std::string& job) {
  return kPostMortemPrefix + job;
}
// LogRankTimes: per-rank timing from the log (Megatron's timers, each rank's own line) followed
// across cycles (timing_from_log).
inline std::string megatron_timers(const std::string& job) {
  return kLogRankTimesPrefix + job;
}
inline std::string job_view(const std::string& job) {
  return kJobViewPrefix + job;
}  // for views
inline std::string near_miss(const std::string& job) {
  return kNearMissPrefix + job;
}
inline std::string stacks(const std::string& job) {
  return kStacksPrefix + job;
}  // last dump
inline std::string hang_confirm(const std::string& job) {
  return kHangConfirmPrefix + job;
}  // confirm_hang's first dump, waiting for its second
inline std::string save_requested(const std::string& job) {
  return kSaveRequestedPrefix + job;
}
// The task (id@start) whose allocation was last node-checked on arrival, or first seen (a run
// found running is not a restart).
inline std::string allocation_checked(const std::string& job) {
  return kAllocationCheckedPrefix + job;
}
// QueuedRestart (rules/queued_restart.h): the restart queued behind a dying task, which the
// rule withdraws when that task goes on.
inline std::string queued_restart(const std::string& job) {
  return kQueuedRestartPrefix + job;
}
// KeptScript (store/kept_script.h): the batch script of a task with no script file, kept while
// Slurm still had it, for a restart after Slurm forgot the task.
inline std::string kept_script(const std::string& job) {
  return kKeptScriptPrefix + job;
}

// Per node: when llmwatch drained it ("" once returned), and its last health summary.
inline std::string drained(const std::string& node) {
  return "drained:" + node;
}
inline std::string node_health(const std::string& node) {
  return "nodehealth:" + node;
}
inline constexpr const char* kNodeHealthPrefix = "nodehealth:";
// Per node: what its last fresh report found wrong (NodeReport::problems), for the lemon
// rule's incidents: one when a problem begins, not each time its wording changes.
inline std::string node_problems(const std::string& node) {
  return "nodeproblems:" + node;
}
inline constexpr const char* kDrainedPrefix = "drained:";
// Per node: the figures its [[check]]s reported, {"<check>/<label>": [value, ts]}.
inline std::string node_figures(const std::string& node) {
  return "figures:" + node;
}
inline constexpr const char* kNodeFiguresPrefix = "figures:";
// Per node: when llmwatch asked Slurm to reboot it ("" once a check after the boot spoke).
inline std::string rebooting(const std::string& node) {
  return "rebooting:" + node;
}
inline constexpr const char* kRebootingPrefix = "rebooting:";
// Per node: when llmwatch last asked an idle node for a node-check as a short job.
inline std::string idle_checked(const std::string& node) {
  return "idlecheck:" + node;
}
inline constexpr const char* kIdleCheckedPrefix = "idlecheck:";

// Per [[storage]] path and per [[check]].
inline std::string storage(const std::string& path) {
  return "storage:" + path;
}
inline std::string command_check(const std::string& name) {
  return "cmdcheck:" + name;
}

// The supervisor's own.
inline constexpr const char* kHeartbeat = "heartbeat";
inline constexpr const char* kNodes = "nodes";  // sinfo's nodes needing attention
inline constexpr const char* kClock = "clock";
inline constexpr const char* kSlurmFailures = "slurm.failures";
inline constexpr const char* kSlurmFormat = "slurm.format";
inline constexpr const char* kCompactedAt = "compacted_at";
// The progress series is thinned up to this time (compaction thins what aged since).
inline constexpr const char* kSeriesThinnedTo = "series_thinned_to";
inline constexpr const char* kSelfChain = "self.chain";
inline constexpr const char* kSelfConfig = "self.config";
inline constexpr const char* kSelfInterval = "self.interval";
inline constexpr const char* kSelfSuccessor = "self.successor";

}  // namespace llmwatch::kv
