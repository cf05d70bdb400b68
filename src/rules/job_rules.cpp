#include "rules/job_rules.h"

#include <algorithm>

#include "rules/pending_reason.h"
#include "rules/training_rules.h"
#include "util/strings.h"
#include "util/text.h"
#include "util/units.h"

namespace llmwatch {

std::string job_label(const JobSettings& job) {
  return job.name.empty() ? "id:" + std::to_string(job.id.value_or(0)) : job.name;
}

std::set<std::string> configured_labels(const Config& config) {
  std::set<std::string> out;
  for (const auto& job : config.jobs) out.insert(job_label(job));
  return out;
}

QueueIndex::QueueIndex(const std::vector<SlurmJob>& queue) {
  for (const auto& q : queue) {
    names_[q.name].push_back(&q);
    ids_[q.job_id].push_back(&q);
    if (q.array_job_id && q.array_job_id != q.job_id) ids_[q.array_job_id].push_back(&q);
  }
}

const std::vector<const SlurmJob*>& QueueIndex::by_name(const std::string& name) const {
  static const std::vector<const SlurmJob*> none;
  auto it = names_.find(name);
  return it == names_.end() ? none : it->second;
}

const std::vector<const SlurmJob*>& QueueIndex::by_id(std::int64_t id) const {
  static const std::vector<const SlurmJob*> none;
  auto it = ids_.find(id);
  return it == ids_.end() ? none : it->second;
}

std::string QueueIndex::similar_name(const std::string& name, const std::string& user,
                                     const std::string& exclude) const {
  std::vector<std::string> candidates;
  for (const auto& [queued, entries] : names_) {
    if (queued == name || queued == exclude) continue;
    if (user.empty() || std::any_of(entries.begin(), entries.end(),
                                    [&](const SlurmJob* q) { return q->user == user; }))
      candidates.push_back(queued);
  }
  std::sort(candidates.begin(), candidates.end());  // the same hint whatever the hash order
  return closest_match(name, candidates);
}

// The entries of the watched job's own (never llmwatch's, never another user's), present or not.
template <class Fn>
static void for_each_own(const QueueIndex& queue, const JobSettings& job,
                         const std::string& self_job_name, Fn&& fn) {
  for (const SlurmJob* q : job.id ? queue.by_id(*job.id) : queue.by_name(job.name)) {
    if (q->name == self_job_name) continue;  // llmwatch never watches itself
    if (!job.user.empty() && q->user != job.user) continue;
    if (!job.account.empty() && q->account != job.account) continue;
    if (!job.partition.empty() && q->partition != job.partition) continue;
    fn(*q);
  }
}

std::vector<SlurmJob> select_jobs(const QueueIndex& queue, const JobSettings& job,
                                  const std::string& self_job_name) {
  std::vector<SlurmJob> out;
  for_each_own(queue, job, self_job_name, [&](const SlurmJob& q) {
    if (q.present()) out.push_back(q);  // COMPLETED, CANCELLED, FAILED linger a while
  });
  return out;
}

std::optional<SlurmJob> select_ended(const QueueIndex& queue, const JobSettings& job,
                                     const std::string& self_job_name) {
  std::optional<SlurmJob> newest;
  for_each_own(queue, job, self_job_name, [&](const SlurmJob& q) {
    if (q.present() || q.start_time <= 0) return;  // never started: nothing ran to end
    if (!newest || q.start_time > newest->start_time) newest = q;
  });
  return newest;
}

std::vector<SlurmJob> select_jobs(const std::vector<SlurmJob>& queue, const JobSettings& job,
                                  const std::string& self_job_name) {
  return select_jobs(QueueIndex(queue), job, self_job_name);
}

Finding ended_finding(const std::string& label, const PostMortem& pm) {
  EndClass c = pm.verdict.cls;
  Severity sev = c == EndClass::Completed || c == EndClass::Cancelled ? Severity::Info
                 : c == EndClass::Unknown                             ? Severity::Warning
                                                                      : Severity::Critical;
  std::string summary = pm.verdict.summary + " on " + pm.nodes;
  if (pm.node_check_pending) {
    sev = Severity::Unknown;  // which nodes to avoid is not known yet: nothing acts
    summary += "; the node-check after the crash did not fit this cycle: decided next cycle";
  } else if (!pm.suspects.empty()) {
    summary += "; suspect " + describe_suspects(pm.suspects);
  } else if (may_be_hardware(c)) {
    summary += "; no node to blame";
  }
  Finding f = make_finding("job:" + label, label, "ended", sev, summary);
  f.cause = end_class_name(c);
  f.episode = task_episode(pm.task, pm.task_start);
  f.evidence = pm.verdict.evidence;
  for (const auto& s : pm.suspects)
    for (const auto& why : s.why) f.evidence.push_back("suspect " + s.node + ": " + why);
  return f;
}

static std::string fmt(double seconds);

// Before the limit: Slurm ends the task at start + time limit. Close to that, with no
// checkpoint saved within the lead time, the run would redo everything since its last save:
// ask for one (the save switch). The continued run (on_timeout) then loses little.
static std::optional<Finding> time_limit_finding(const JobSettings& job, const std::string& label,
                                                 const SlurmJob& task, const JobProgress& p,
                                                 double now) {
  double lead = static_cast<double>(job.save_before_limit.count());
  if (lead <= 0 || task.time_limit_minutes <= 0 || task.start_time <= 0) return std::nullopt;
  double left = static_cast<double>(task.start_time + task.time_limit_minutes * 60) - now;
  if (left <= 0 || left > lead) return std::nullopt;
  if (p.checkpoint_done > 0 && now - p.checkpoint_done < lead) return std::nullopt;
  Finding f =
      make_finding("job:" + label, label, "time-limit", Severity::Info,
                   task.display_id() + " reaches its time limit in " + fmt(left) +
                       " with no checkpoint in the last " + fmt(lead) + ": asking for a save");
  f.evidence.push_back("time limit " + std::to_string(task.time_limit_minutes) + " min from " +
                       std::to_string(task.start_time));
  return f;
}

static std::string fmt(double seconds) {
  return format_duration(Seconds(static_cast<long long>(seconds)));
}

// A loop's episode is its last death: one more (a person released the held tasks, and the
// next died the same way) is news, told and held again. As one episode, the loop that went on
// after a release was never held again: its hold was done.
std::vector<std::string> step_loop_tasks(const Finding& f, const JobProgress& p) {
  std::vector<std::string> tasks = p.end_step_episodes;
  if (f.kind == "hung") tasks.push_back(task_episode(p.task, p.task_start));
  return tasks;
}

static std::string loop_episode(const JobProgress& p) {
  return "after " + p.counted_task;
}

// A step loop: crash_loop_after runs in a row ended at the same last step, none passing it. A
// run that hangs or dies at one bad sample or code path meets it again after every restart,
// whatever its nodes: each restart only pays the hang allowance and the work since the last
// save again (the chaos soak's array used up max_restarts so). Said once no task runs, or while
// the next task of an array that goes on by itself runs with more queued behind it (they are
// held); a run a person started afresh has nothing queued and is left to reach the step. A task
// hung there is the hang's own finding (step_loop_hang below).
static std::optional<Finding> step_loop_finding(const JobSettings& job, const std::string& label,
                                                const JobObservation& obs) {
  const JobProgress* p = obs.progress;
  if (!p || !p->end_step || p->step_ends < job.crash_loop_after) return std::nullopt;
  if (obs.running && std::none_of(obs.entries.begin(), obs.entries.end(),
                                  [](const SlurmJob& e) { return e.pending() && e.is_array(); }))
    return std::nullopt;
  Finding f = make_finding(
      "job:" + label, label, "crash-loop", Severity::Critical,
      std::to_string(p->step_ends) + " runs in a row ended at step " +
          std::to_string(*p->end_step) +
          " without passing it: the same step every time points at the data or code there, "
          "not a node; restarts stopped, needs a human");
  f.cause = kStepLoop;
  f.evidence.push_back("runs: " + p->end_step_tasks);
  f.evidence.insert(f.evidence.end(), p->recent.begin(), p->recent.end());
  f.episode = loop_episode(*p);
  return f;
}

// A running task hung at the step where the runs before it ended, the last run the step loop
// allows: its hang is still dumped, confirmed and cancelled, but not restarted (the policy
// puts on_crash_loop in the restart's place, before the cancel, so that an array's next task
// is held before it can start). A near miss does none of it.
bool ends_a_step_loop(const JobSettings& job, const JobProgress& p) {
  return p.end_step && p.step && *p.step == *p.end_step && p.task != p.counted_task &&
         p.step_ends + 1 >= job.crash_loop_after;
}

static std::string step_loop_hang(const JobSettings& job, const JobProgress& p) {
  if (!ends_a_step_loop(job, p)) return "";
  return "; the " + std::to_string(p.step_ends) + " runs before it (" + p.end_step_tasks +
         ") stopped at step " + std::to_string(*p.step) +
         " too: not restarted, on_crash_loop instead";
}

std::vector<Finding> evaluate_job(const JobSettings& job, const JobObservation& obs, double now) {
  std::vector<Finding> out;
  std::string label = job_label(job);
  auto make = [&](const std::string& kind, Severity sev, std::string summary) {
    return make_finding("job:" + label, label, kind, sev, std::move(summary));
  };

  if (obs.progress && obs.progress->quick_deaths >= job.crash_loop_after) {
    auto f = make("crash-loop", Severity::Critical,
                  std::to_string(obs.progress->quick_deaths) +
                      " runs in a row died before their first step; "
                      "restarts stopped, needs a human");
    f.evidence.assign(obs.progress->recent.begin(), obs.progress->recent.end());
    f.episode = loop_episode(*obs.progress);
    out.push_back(f);
  } else if (auto f = step_loop_finding(job, label, obs)) {
    out.push_back(*f);
  }
  bool queued = false;
  for (const auto& e : obs.entries) queued |= e.pending();
  if (obs.kill_switch_age && *obs.kill_switch_age > static_cast<double>(job.kill_grace.count()) &&
      queued) {
    auto f = make("kill-switch-left", Severity::Warning,
                  "kill switch " + job.kill_switch + " is " + fmt(*obs.kill_switch_age) +
                      " old and tasks are still queued: they will exit at start; remove it "
                      "(llmwatch release " +
                      label + ") if the run should continue");
    out.push_back(f);
  }
  if (obs.save_switch_age &&
      *obs.save_switch_age > static_cast<double>(job.checkpoint_grace.count())) {
    out.push_back(make("save-switch-stuck", Severity::Warning,
                       "save switch " + job.save_switch + " not removed after " +
                           fmt(*obs.save_switch_age) +
                           ": the training loop did not take the checkpoint"));
  }
  if (obs.entries.empty() && obs.ended) {
    out.push_back(ended_finding(label, *obs.ended));
    // A run that completed or was cancelled is done, not missing; one that ended for an
    // unknown cause is also still "absent", for sites that restart on absence.
    if (obs.ended->verdict.cls != EndClass::Unknown) return out;
  }
  if (obs.entries.empty()) {
    std::string hint;
    if (!obs.similar_name.empty())
      // A queued name is anyone's bytes: made valid UTF-8 and printable before it is shown.
      hint = "; Slurm has a job named '" + sanitize_line(valid_utf8(obs.similar_name), 100) +
             "': is the [[job]] name misspelled?";
    out.push_back(
        make("absent", Severity::Critical, "nothing RUNNING or PENDING for " + label + hint));
    return out;
  }
  if (!obs.running) {
    if (const SlurmJob* held = launch_failed_entry(obs.entries)) {
      out.push_back(launch_failed_finding(label, *held, obs.launch_failure));
      return out;
    }
    for (const auto& e : obs.entries) {
      if (e.pending() && classify_pending_reason(e.reason) == PendingClass::Stuck) {
        auto f = make("stuck", Severity::Warning,
                      e.display_id() + " is PENDING with reason " + e.reason_shown() +
                          ", which will not clear by itself");
        f.evidence.push_back(e.display_id() + " " + e.state + " (" + e.reason_shown() + ")");
        out.push_back(f);
        break;
      }
    }
    return out;
  }
  if (!obs.log_error.empty()) {
    auto f = make("log-unreadable", Severity::Unknown,
                  "cannot read the log of " + obs.running->display_id());
    f.evidence.push_back(obs.log_error);
    out.push_back(f);
    return out;
  }
  if (!obs.progress) return out;
  // A task Slurm is ending is judged by its end (post-mortem), once it is gone or back in the
  // queue: the SIGTERM traceback torchrun prints on a requeue or preemption is no crash, and
  // a task being killed makes no progress by design (#26.1 follow-up: a requeued run got a
  // restart journaled beside itself). A real crash seen now is classified a cycle later.
  const JobProgress& p = *obs.progress;
  if (obs.running->ending() || p.slurm_ending(now)) return out;
  if (auto f = time_limit_finding(job, label, *obs.running, p, now)) out.push_back(*f);
  std::vector<std::string> evidence(p.recent.begin(), p.recent.end());
  if (!p.crash.empty()) {
    // A task that steps on after the signature handled it (#26: a logged wandb retry was a
    // crash, and the run was restarted beside itself): a warning, for a human to read.
    bool trains_on = p.trained_past_crash();
    auto f = make("crashed", trains_on ? Severity::Warning : Severity::Critical,
                  obs.running->display_id() + " printed a " + p.crash + " signature on " +
                      obs.running->nodes + (trains_on ? " and still makes progress" : ""));
    f.evidence = evidence;
    f.episode = task_episode(obs.running->display_id(), obs.running->start_time);
    out.push_back(f);
  }
  auto health = evaluate_training(job, label, p);
  out.insert(out.end(), health.begin(), health.end());
  StaleVerdict v = evaluate_stale(p, job, now);
  if (v.hung && !obs.clock_untrusted.empty()) {
    // A hang measured across a clock jump or a gap may be the clock's: unknown, not acted on.
    auto f = make("hang-unknown", Severity::Unknown,
                  obs.running->display_id() + ": the hang rule cannot be applied this cycle");
    f.evidence.push_back(obs.clock_untrusted);
    out.push_back(f);
  } else if (v.hung) {
    std::string what = v.phase == "startup" ? "no first step " + fmt(v.idle) + " after start"
                                            : "no step progress for " + fmt(v.idle);
    if (p.step) what += " (last step " + std::to_string(*p.step) + ")";
    std::string loop = step_loop_hang(job, p);
    auto f = make("hung", Severity::Critical,
                  obs.running->display_id() + ": " + what + "; allowed " + fmt(v.allowance) +
                      " in " + v.phase + " (" + v.how + ")" + loop);
    if (!loop.empty()) f.cause = kStepLoop;
    f.evidence = evidence;
    f.evidence.push_back("log: " + p.log_path);
    f.episode = task_episode(obs.running->display_id(), obs.running->start_time);
    out.push_back(f);
  }
  return out;
}

}  // namespace llmwatch
