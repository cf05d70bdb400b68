#include "cycle/goodput_record.h"

#include <algorithm>

#include "rules/job_rules.h"
#include "store/goodput_ledger.h"
#include "store/store.h"

namespace llmwatch {
namespace {

// GPUs of a task: what Slurm allocated it (its TRES' gres/gpu, asked for while it is pending),
// else the [[job]]'s gpus (the whole run's), else its nodes × [gpu] expected_gpus, else one per
// node (the ledger then counts node-seconds).
double gpus_of(const CycleState& s, const JobWork& w, const SlurmJob& task) {
  if (task.gpus > 0) return task.gpus;
  if (w.settings->gpus > 0) return w.settings->gpus;
  double nodes = std::max(1, task.node_count);
  return nodes * std::max(1, s.config.gpu.expected_gpus);
}

// The share of time a slowdown costs now: a slow node's, or the step time over the run's own
// median (as the slowdown finding measures it).
double slow_share(const CycleState& s, const JobWork& w) {
  bool slowdown = false;
  for (const auto& f : s.findings)
    slowdown |= f.subject == w.label && (f.kind == "slowdown" || f.kind == "straggler");
  if (!slowdown) return 0;
  if (w.straggler) return 1 - w.straggler->relative;
  const auto& times = w.progress.step_times;
  if (times.empty() || !w.progress.step_time || *w.progress.step_time <= 0) return 0;
  std::vector<double> sorted(times);
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  return std::max(0.0, 1 - sorted[sorted.size() / 2] / *w.progress.step_time);
}

// The tasks of a step loop said this cycle (its crash-loop, or a hang at its step): their ends
// are the step's, not the nodes' their crashes named.
std::vector<std::string> loop_tasks(const CycleState& s, const JobWork& w) {
  const JobProgress& p = w.progress;
  std::vector<std::string> out;
  if (!p.end_step || p.end_step_episodes.empty()) return out;
  for (const auto& f : s.findings)
    if (f.subject == w.label && f.cause == kStepLoop) {
      out = step_loop_tasks(f, p);
      if (f.kind == "hung") break;  // the most: the loop's ends and the hung task
    }
  return out;
}

}  // namespace

void record_goodput(CycleState& s, const JobWork& w) {
  GoodputState state = s.store.goodput_state(w.label);
  GoodputLook look;
  // The tasks' states are squeue's, as old as its answer: a wake replays its tick's. They hold
  // up to then, not up to now: a task shown running may have ended since, and its successor
  // started. The time after is left to the next look that asks afresh, which knows that end
  // and that start (GoodputTruth under load: a wake charged a cancelled hang 1.3 s into the
  // restart's startup and the queue before it).
  look.now = s.queue ? s.now - std::clamp(s.queue->age_s, 0.0, s.now) : s.now;
  // The steps read this cycle: the running task's, or the last lines of one that ended, read
  // after its end.
  const JobProgress& p = w.progress;
  look.advanced = !w.advances.empty();
  look.progress_at = p.last_progress;
  look.step = p.step;
  if (const auto& t = w.obs.running) {
    // Steps read now say it ran until the last of them, whatever the queue's age.
    if (look.advanced) look.now = std::clamp(p.last_progress, look.now, s.now);
    look.task = t->run_key();
    look.task_start = static_cast<double>(t->start_time);
    look.gpus = gpus_of(s, w, *t);
    if (!w.advances.empty() && p.step) {
      // The read's steps share its clock: the first was done about a step time per later
      // step before it.
      look.first_step = w.advances.front().first;
      double per_step = p.step_time && *p.step_time > 0 ? *p.step_time : p.observed_interval;
      look.first_step_at =
          p.last_progress - static_cast<double>(*p.step - *look.first_step) * per_step;
    }
    if (p.checkpoint_since > 0) {
      look.save_from = p.checkpoint_since;  // saving now
    } else if (p.checkpoint_began > 0 && p.checkpoint_done >= p.checkpoint_began) {
      // The last save. Its lines carry the clock of the read that held them (a save begun and
      // ended within one read took no time by them): its printed duration, where the trainer
      // prints one, says better how long it took.
      look.save_from = p.checkpoint_began;
      look.save_to = p.checkpoint_done;
      if (p.save_seconds && *p.save_seconds > 0 && *p.save_seconds < s.now - p.checkpoint_began)
        look.save_to = std::min(s.now, p.checkpoint_began + *p.save_seconds);
    }
    for (const auto& f : s.findings) look.hang_firing |= f.subject == w.label && f.kind == "hung";
    look.slow_share = slow_share(s, w);
  } else {
    for (const auto& e : w.obs.entries)
      if (e.pending()) {
        look.pending = true;
        look.gpus = gpus_of(s, w, e);
      }
  }
  if (w.ended && w.ended_new) {
    look.ended = {ledger_cause(*w.ended),
                  w.ended->suspects.empty() ? std::string() : w.ended->suspects.front().node};
    look.ended_at = static_cast<double>(w.ended->task_end);
    // Slurm's word on the end is fresh (the post-mortem asked it), whatever the queue's age.
    if (look.ended_at > look.now) look.now = std::min(s.now, look.ended_at);
  }
  auto charges = account_goodput(state, look);
  auto taken_back = unblame_loop(state, charges, GoodputLedger::day_of(s.now), loop_tasks(s, w),
                                 w.progress.end_step_episodes);
  s.store.record_goodput(w.label, state, charges, s.now, taken_back);
}

}  // namespace llmwatch
