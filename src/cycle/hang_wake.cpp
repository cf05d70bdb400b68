#include "cycle/hang_wake.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "rules/job_progress.h"
#include "rules/job_rules.h"
#include "store/hang_confirm.h"
#include "store/keys.h"
#include "store/store.h"

namespace llmwatch {

std::optional<double> earliest_hang_deadline(const Config& config, Store& store, double looked_at,
                                             double now, double before) {
  looked_at = std::min(looked_at, now);
  std::optional<double> out;
  for (const auto& job : config.jobs) {
    std::string label = job_label(job);
    // Running as the last cycle saw it (the job view): a pending or gone job cannot hang.
    auto view =
        nlohmann::json::parse(store.get(kv::job_view(label)).value_or("{}"), nullptr, false);
    bool running = false;
    if (view.is_object())
      for (const auto& e : view.value("entries", nlohmann::json::array()))
        running |= e.is_object() && e.value("state", "") == "RUNNING";
    if (!running) continue;
    JobProgress p = store.progress(label);
    // A hang's first dump waits for its second (confirm_hang, shorter after a fatal line): wake
    // when it is due. One already due at the last look was that cycle's, whenever it comes
    // (never a wake "now" in a loop); one due since, now.
    if (const double gap = confirm_gap(p, job); gap > 0)
      if (auto pending = read_hang_confirm(store, label)) {
        double due = std::max(now, pending->ts + gap);
        if (pending->ts + gap > looked_at && due < before && (!out || due < *out)) out = due;
      }
    if (p.task.empty()) continue;
    // The look for a fatal line's rank (rank_look_due): due before its run's hang, which it
    // may bring forward to that moment.
    if (const double look = rank_look_due(p); look > looked_at) {
      double at = std::max(now, look + kWakePastDeadline);
      if (at < before && (!out || at < *out)) out = at;
    }
    StaleVerdict v = evaluate_stale(p, job, looked_at);
    if (v.hung || v.allowance <= 0) continue;  // found by the last look, or no rule in force
    // Progress is clocked at the log's write (or, when its mtime cannot be true, at the read),
    // so the allowance may already have run out when the tick looks: then the wake is now.
    double at = std::max(now, looked_at + (v.allowance - v.idle));
    if (at < before && (!out || at < *out)) out = at;
  }
  return out;
}

}  // namespace llmwatch
