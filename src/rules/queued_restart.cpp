#include "rules/queued_restart.h"

#include <algorithm>

#include "slurm/hostlist.h"
#include "util/strings.h"

namespace llmwatch {

std::string QueuedRestart::to_text() const {
  return successor + "\t" + after_task + "\t" + std::to_string(after_start) + "\t" + excluded +
         "\t" + std::to_string(queued_at);
}

std::optional<QueuedRestart> QueuedRestart::from_text(std::string_view text) {
  auto fields = split(text, '\t');
  if (fields.size() < 3 || fields.size() > 5 || fields[0].empty() || fields[1].empty())
    return std::nullopt;
  auto start = to_int64(fields[2]);
  if (!start) return std::nullopt;
  QueuedRestart q{fields[0], fields[1], *start, fields.size() >= 4 ? fields[3] : ""};
  if (fields.size() == 5) {
    auto at = to_double(fields[4]);
    if (!at) return std::nullopt;
    q.queued_at = *at;
  }
  return q;
}

bool submitted_as(const SlurmJob& e, const std::string& id) {
  return std::to_string(e.is_array() ? e.array_job_id : e.job_id) == id;
}

std::optional<Finding> restart_not_needed(const std::string& label, const QueuedRestart& queued,
                                          const std::vector<SlurmJob>& entries,
                                          const JobProgress& progress) {
  const SlurmJob* successor = nullptr;
  const SlurmJob* task = nullptr;
  const SlurmJob* other = nullptr;  // a run of the job someone else started
  for (const auto& e : entries) {
    if (submitted_as(e, queued.successor))
      successor = &e;
    else if (e.display_id() == queued.after_task)
      task = &e;
    else if (e.present() && !other)
      other = &e;
  }
  // Started or gone: Slurm decided, as it was asked to.
  if (!successor || !successor->pending()) return std::nullopt;
  std::string why;
  if (other)
    why = "the job has another run, " + other->display_id() + " (" + other->state + ")";
  else if (!task)
    return std::nullopt;
  else if (task->pending())
    why = queued.after_task + " is back in the queue (requeued by Slurm)";
  else if (task->start_time != queued.after_start)
    why = queued.after_task + " runs again under a new start (requeued by Slurm)";
  else if (progress.task == queued.after_task && progress.task_start == queued.after_start &&
           progress.trained_past_crash())
    why = queued.after_task + " steps on past its " + progress.crash + " crash";
  if (why.empty()) return std::nullopt;
  Finding f =
      make_finding("job:" + label, label, "restart-unneeded", Severity::Warning,
                   "job " + queued.successor + " was queued to restart " + label + " once " +
                       queued.after_task + " ended, but " + why + ": withdrawing it");
  f.evidence.push_back(successor->display_id() + " " + successor->state + " (" + successor->reason +
                       ")");
  f.cause = queued.successor;
  f.episode = queued.successor;
  return f;
}

std::optional<Finding> queued_restart_misses(const std::string& label, const QueuedRestart& queued,
                                             const std::vector<SlurmJob>& entries,
                                             const std::vector<std::string>& suspects,
                                             const std::vector<std::string>& new_offenders) {
  if (suspects.empty() && new_offenders.empty()) return std::nullopt;
  const SlurmJob* successor = nullptr;
  const SlurmJob* task = nullptr;
  for (const auto& e : entries) {
    if (submitted_as(e, queued.successor))
      successor = &e;
    else if (e.display_id() == queued.after_task)
      task = &e;
  }
  // Only while Slurm may still place it, behind the very task it was queued for.
  if (!successor || !successor->pending() || !task || !task->running() ||
      task->start_time != queued.after_start)
    return std::nullopt;
  const auto kept_off = hosts_in(queued.excluded);
  std::vector<std::string> missed;
  auto miss = [&](const std::vector<std::string>& nodes) {
    std::vector<std::string> added;
    for (const auto& node : nodes)
      if (std::find(kept_off.begin(), kept_off.end(), node) == kept_off.end() &&
          std::find(missed.begin(), missed.end(), node) == missed.end()) {
        missed.push_back(node);
        added.push_back(node);
      }
    return compress_hostlist(added);
  };
  const std::string attributed = miss(suspects), offenders = miss(new_offenders);
  if (missed.empty()) return std::nullopt;
  std::string why;
  if (!attributed.empty()) why = attributed + ", which the crash is attributed to";
  if (!offenders.empty())
    why += (why.empty() ? "" : ", and ") + offenders +
           ", which the suspicion ledger holds with repeated incidents";
  Finding f = make_finding("job:" + label, label, "restart-keep-off", Severity::Warning,
                           "job " + queued.successor + ", queued to restart " + label + " once " +
                               queued.after_task + " ended, would start on " + why +
                               " since it was queued: keeping " +
                               (missed.size() == 1 ? "it" : "them") + " off");
  f.evidence.push_back(successor->display_id() + " " + successor->state + " (" + successor->reason +
                       ")" + (queued.excluded.empty() ? "" : ", kept off " + queued.excluded));
  f.cause = compress_hostlist(missed);
  f.episode = queued.successor;
  return f;
}

std::optional<Finding> restart_after_cancel(const std::string& label, const QueuedRestart& queued,
                                            const PostMortem& ended, bool cancelled_by_llmwatch,
                                            const std::vector<SlurmJob>& entries) {
  if (cancelled_by_llmwatch || ended.verdict.cls != EndClass::Cancelled ||
      !ended.same_task(queued.after_task, queued.after_start))
    return std::nullopt;
  auto successor = std::find_if(entries.begin(), entries.end(), [&](const SlurmJob& e) {
    return submitted_as(e, queued.successor);
  });
  if (successor == entries.end()) return std::nullopt;  // gone: nothing runs in its place
  Finding f = make_finding(
      "job:" + label, label, "restart-after-cancel", Severity::Warning,
      queued.after_task +
          " was cancelled, not by llmwatch, while a restart was queued behind its "
          "crash: Slurm counts a cancel as a failure and " +
          (successor->running() ? "started" : "starts") + " job " + successor->display_id() +
          " in its place; scancel " + successor->control_id() + " if the run was meant to stop");
  f.evidence.push_back(ended.verdict.summary);
  f.evidence.push_back(successor->display_id() + " " + successor->state);
  f.cause = queued.successor;
  f.episode = queued.successor;
  return f;
}

}  // namespace llmwatch
