#include "cycle/goodput_record.h"

#include <algorithm>

#include "store/goodput_ledger.h"
#include "store/store.h"

namespace llmwatch {
namespace {

// GPUs of a task: the [[job]]'s gpus (the whole run's), else its nodes × [gpu] expected_gpus,
// else one per node (the ledger then counts node-seconds).
double gpus_of(const CycleState& s, const JobWork& w, const SlurmJob& task) {
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

}  // namespace

void record_goodput(CycleState& s, const JobWork& w) {
  GoodputState state = s.store.goodput_state(w.label);
  GoodputLook look;
  look.now = s.now;
  if (const auto& t = w.obs.running) {
    look.task = t->display_id() + "@" + std::to_string(t->start_time);
    look.task_start = static_cast<double>(t->start_time);
    look.gpus = gpus_of(s, w, *t);
    look.advanced = !w.advances.empty();
    look.step = w.progress.step;
    look.checkpointing = w.progress.checkpoint_since > 0;
    for (const auto& f : s.findings) look.hang_firing |= f.subject == w.label && f.kind == "hung";
    look.slow_share = slow_share(s, w);
  } else {
    for (const auto& e : w.obs.entries)
      if (e.pending()) {
        look.pending = true;
        look.gpus = gpus_of(s, w, e);
      }
  }
  if (w.ended && w.ended_new)
    look.ended = {end_class_name(w.ended->verdict.cls),
                  w.ended->suspects.empty() ? std::string() : w.ended->suspects.front().node};
  auto charges = account_goodput(state, look);
  GoodputLedger(s.store).add(w.label, s.now, charges);
  s.store.put_goodput_state(w.label, state, s.now);
}

}  // namespace llmwatch
