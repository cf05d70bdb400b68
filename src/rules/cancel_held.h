#pragma once
// Did llmwatch's cancel hold? Slurm marks a cancelled job COMPLETING (CG) the moment `scancel`
// returns, so a task llmwatch cancelled that squeue shows RUNNING again was not cancelled: a
// slurmctld killed before it kept the change recovers the job as it was (the chaos soak: a
// scancel one second before a slurmctld SIGKILL, and the hung task still RUNNING 55 s later).
// The decision to cancel was made, journaled and announced; nothing would make it again (the
// cancel's idempotency key is done), and its restart may already run beside the task. So the
// cancel is issued again, a few times at most, then a person is called. Pure.
#include <map>
#include <optional>
#include <string>

#include "rules/finding.h"
#include "slurm/slurm_job.h"

namespace llmwatch {

// A task's cancels journaled as done (SlurmJob::run_key -> these).
struct CancelsDone {
  int count = 0;       // the first and every one issued again
  double last_at = 0;  // when the last one returned
};
using CancelsByTask = std::map<std::string, CancelsDone>;

// Past this, a cancelled task that is RUNNING is one Slurm did not cancel. Slurm's own change is
// at once; the margin covers a snapshot taken while scancel ran, and a cycle that overlapped it.
inline constexpr double kCancelHoldsWithin = 30;
// Cancels in all (the first included) before a person is called instead.
inline constexpr int kMaxCancels = 3;

// The finding for `task` of job `label` when a cancel of it did not hold: "cancel-not-held",
// critical, a new episode for each cancel that did not hold. Its cause is "again-N" (the
// cancel to issue now is the Nth again) while another cancel may be tried, else empty.
std::optional<Finding> cancel_not_held(const std::string& label, const SlurmJob& task,
                                       const CancelsDone& done, double now);

// The task (its run key) a "cancel-not-held" finding is about: the one to cancel again.
std::string not_held_run_key(const Finding& f);

// The idempotency key of the cancel of `run_key` that `cause` asks for ("" for the first).
std::string cancel_key(const std::string& run_key, const std::string& cause);
// The task a cancel's idempotency key is about: cancel_key's inverse ("" for another key).
std::string cancelled_run_key(const std::string& idem_key);

}  // namespace llmwatch
