#pragma once
// A task's output file, kept before an action after which Slurm empties it. A requeued task
// keeps its id and so its StdOut, and Slurm opens that file anew, truncated, when it starts the
// task again unless the job appends (--open-mode=append, JobFileAppend=1): the hung run's last
// lines, the evidence of why it was requeued, were gone (local cluster, stop 66).
#include <cstddef>
#include <string>

#include "action.h"

namespace llmwatch {

inline constexpr std::size_t kKeptLogBytes = 4 << 20;  // a file's last 4 MiB
inline constexpr std::size_t kKeptLogs = 40;  // the newest copies: 20 tasks' with their StdErr

// <state_dir>/requeued-logs: 0700, its copies 0600 (they hold what the job's owner wrote). Not
// <state_dir>/logs, which holds the self job's own logs (self_job.cpp, pruned by age in
// housekeeping.cpp): neither pruning may take the other's files.
std::string kept_logs_dir(const std::string& state_dir);

// Copies the last kKeptLogBytes of `t`'s StdOut to <state_dir>/requeued-logs/<task>-<start>.log
// (and of a StdErr file of its own to <task>-<start>.err.log) and keeps the newest kKeptLogs there.
// Only a regular file owned by the task's owner, opened without following a symlink: the owner
// names the path, and llmwatch may read as root. A hung mount holds the copy up at most
// probe_timeout. For the action's line: "its log's last 1.2 MiB kept in PATH", or why not ("its log
// not kept: ...").
std::string keep_task_log(const SlurmJob& t, const ActionContext& ctx);

}  // namespace llmwatch
