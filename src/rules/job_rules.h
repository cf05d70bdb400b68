#pragma once
// Turns what the probes saw of one watched job into findings: absent, stuck pending,
// hung, crashed, log unreadable. Pure: the same inputs always give the same findings.
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "rules/finding.h"
#include "rules/job_progress.h"
#include "rules/launch_failure.h"
#include "rules/post_mortem.h"
#include "slurm/slurm_job.h"

namespace llmwatch {

// The queue indexed by job name and by job/array id, built once per cycle: with 100,000
// queued jobs and 1,000 watched ones, scanning the queue per watched job dominated a cycle.
class QueueIndex {
 public:
  explicit QueueIndex(const std::vector<SlurmJob>& queue);
  const std::vector<const SlurmJob*>& by_name(const std::string& name) const;
  const std::vector<const SlurmJob*>& by_id(std::int64_t id) const;  // job or array job id
  // The queued name closest to `name` among `user`'s jobs (every user's when empty), never
  // `exclude` (llmwatch's own); "" when none is close enough to be a likely typo. It scans
  // every name: asked only for a watched job no task of which was ever seen.
  std::string similar_name(const std::string& name, const std::string& user,
                           const std::string& exclude) const;

 private:
  std::unordered_map<std::string, std::vector<const SlurmJob*>> names_;
  std::unordered_map<std::int64_t, std::vector<const SlurmJob*>> ids_;
};

// The queue entries that belong to a watched job (never llmwatch's own job).
std::vector<SlurmJob> select_jobs(const QueueIndex& queue, const JobSettings& job,
                                  const std::string& self_job_name);
std::vector<SlurmJob> select_jobs(const std::vector<SlurmJob>& queue, const JobSettings& job,
                                  const std::string& self_job_name);

// The label a [[job]] goes by in keys and views: its name, or "id:<N>".
std::string job_label(const JobSettings& job);
// Every configured [[job]]'s label: what is still watched (a retired job's state and findings
// are cleared by it).
std::set<std::string> configured_labels(const Config& config);

// The cause of a "hung" finding whose task stopped where the runs before it did (a step loop):
// the policy puts on_crash_loop in its restart's place. And of the "crash-loop" finding of
// runs that ended there: their incidents are withdrawn from the ledger.
inline constexpr const char* kStepLoop = "step-loop";
// The tasks (task_episode) whose ends a step-loop finding `f` says were the step's, not the
// nodes': the loop's failed ends, and for a hang at its step the hung task too (a hang after a
// crash is the crash's).
std::vector<std::string> step_loop_tasks(const Finding& f, const JobProgress& p);
// Whether the running task, ending now at its current step, would be the run that makes a
// step loop (the runs before it stopped at that step, crash_loop_after in a row with it).
bool ends_a_step_loop(const JobSettings& job, const JobProgress& p);

struct JobObservation {
  std::vector<SlurmJob> entries;    // from select_jobs
  std::optional<SlurmJob> running;  // the task whose log is followed
  const JobProgress* progress = nullptr;
  std::string log_error;                                   // the log could not be read this cycle
  std::optional<double> kill_switch_age, save_switch_age;  // seconds; nullopt: no such file
  // Why idle time cannot be measured this cycle (a clock jump, a gap); "" when it can.
  std::string clock_untrusted;
  // The post-mortem of the last task, when it ended and nothing runs or waits: the run's end
  // is then classified ("ended"), not merely "absent".
  const PostMortem* ended = nullptr;
  // A queued name close to the watched one, when Slurm never showed a task of it: the hint
  // that the [[job]]'s name is misspelled (#27). "" when there is none or the job was seen.
  std::string similar_name;
  // About the first entry Slurm holds after a failed launch (SlurmJob::launch_failed), if any.
  LaunchFailureContext launch_failure;
};

// The newest entry of the job that squeue still lists after it ended (COMPLETED, FAILED,
// TIMEOUT...), chosen with the same filters as select_jobs.
std::optional<SlurmJob> select_ended(const QueueIndex& queue, const JobSettings& job,
                                     const std::string& self_job_name);

// The finding for a run whose last task ended, from its post-mortem: "ended", with the class
// as its cause; info when it completed or was cancelled, critical when it crashed.
Finding ended_finding(const std::string& label, const PostMortem& pm);

std::vector<Finding> evaluate_job(const JobSettings& job, const JobObservation& obs, double now);

}  // namespace llmwatch
