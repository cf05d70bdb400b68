#include <set>

#include "cycle/executor.h"
#include "cycle/goodput_record.h"
#include "cycle/phases.h"
#include "cycle/shown_speeds.h"
#include "rules/job_rules.h"
#include "rules/queued_restart.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/json_writer.h"
#include "util/text.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// A restart queued behind a task that then ended well: Slurm withdrew it by itself (a job whose
// afternotok can no longer be met is cancelled: --kill-on-invalid-dep). It started no run, so
// it gives back its restart budget, as one the withdraw action cancels does (before, the
// journal kept it as a restart done).
void give_back_queued_restart(CycleState& s, const JobWork& w) {
  const auto& q = w.queued_restart;  // read with the end (prepare_end)
  if (!q || !w.ended->same_task(q->after_task, q->after_start)) return;
  const std::string why = "withdrawn by Slurm: job " + q->successor + " was queued to start if " +
                          q->after_task + " failed, and it ended well";
  if (s.store.withdraw_action(restart_key(q->after_task, q->after_start), why, s.now))
    s.store.add_event(s.now, "action", w.label, "info", "restart " + why);
}

// The firing findings of jobs no longer in the config ("job:<label>/..." for no configured
// label): nothing judges their scope any more, so they would fire for ever. A key is a configured
// job's when any of its prefixes up to a '/' is one (a label may hold a '/').
std::vector<std::string> retired_job_findings(CycleState& s) {
  const std::set<std::string> labels = configured_labels(s.config);
  std::vector<std::string> out;
  for (const auto& row : s.store.firing()) {
    if (row.key.rfind("job:", 0) != 0) continue;
    bool configured = false;
    for (auto slash = row.key.find('/', 4); slash != std::string::npos && !configured;
         slash = row.key.find('/', slash + 1))
      configured = labels.count(row.key.substr(4, slash - 4)) > 0;
    if (!configured) out.push_back(row.key);
  }
  return out;
}

void resolve_cleared(CycleState& s, Executor& executor) {
  std::set<std::string> seen;
  for (const auto& f : s.findings) seen.insert(f.key);
  auto told = [&](const FindingRow& row, const std::string& why) {
    ++s.result.resolved;
    s.store.add_event(s.now, "resolved", row.key.substr(0, row.key.find('/')), "info",
                      row.key + " " + why);
    executor.notify_resolved(row);
  };
  for (const auto& row :
       s.store.resolve_absent(s.scopes, seen, s.now, s.config.resolve_after_cycles))
    told(row, "resolved after " +
                  format_duration(Seconds(static_cast<long long>(s.now - row.first_seen))));
  // Disproved this cycle (a near miss): no longer true, so not shown firing for
  // resolve_after_cycles more cycles. Its alert was a notice, so no "resolved" is sent.
  for (const auto& row : s.store.resolve_keys(s.disproved, s.now))
    told(row, "disproved: " + row.summary);
  // Each retired key is its own scope: resolved at once (no check will look again). Most
  // cycles have none: the firing findings are then not read a third time.
  if (auto retired = retired_job_findings(s); !retired.empty())
    for (const auto& row : s.store.resolve_absent(retired, seen, s.now, 0))
      told(row, "no longer watched: its [[job]] is not in the config");
}

constexpr double kSeriesEvery = 60;

void remember_job(CycleState& s, JobWork& w) {
  // The progress series gets a job's last step at most once a minute, and at once for a new
  // task (start_task clears series_at): a row per step grew the file by 720 MiB a day at
  // 1,000 jobs stepping every 10 s. The views need no finer: time lost to a failure is read
  // from the rows around it, a minute at most too long.
  if (!w.advances.empty() &&
      (w.progress.series_at <= 0 || s.now - w.progress.series_at >= kSeriesEvery ||
       s.now < w.progress.series_at)) {
    const auto& [step, ts] = w.advances.back();
    s.store.add_progress(w.label, ts, step, w.progress.step_time, w.progress.loss);
    w.progress.series_at = s.now;
  }
  // The last run is rewritten only when it changed (a new task, state, nodes or start).
  const auto& run = w.obs.running;
  if (run && !(w.last && w.last->display_id() == run->display_id() && w.last->state == run->state &&
               w.last->nodes == run->nodes && w.last->start_time == run->start_time &&
               w.last->command == run->command))
    s.store.put_last_job(w.label, *run, s.now);
  // A post-mortem is made once per task: kept with the task it is about (which may be one
  // llmwatch never saw running, found ended in squeue), and told in the history.
  // One whose pending node-check came back this cycle is kept again, told once already.
  if (w.ended && w.ended_updated && !w.ended_new)
    s.store.put(kv::post_mortem(w.label), w.ended->to_json(), s.now);
  if (w.ended && w.ended_new && w.last) {
    s.store.put(kv::post_mortem(w.label), w.ended->to_json(), s.now);
    if (!run) s.store.put_last_job(w.label, *w.last, s.now);  // else the task that replaced it
    std::string text = w.ended->verdict.summary;
    if (!w.ended->suspects.empty()) text += "; suspect " + describe_suspects(w.ended->suspects);
    s.store.add_event(s.now, "ended", w.label,
                      w.ended->verdict.cls == EndClass::Completed ? "info" : "warning", text,
                      w.ended->to_json());
    if (w.ended->verdict.cls == EndClass::Completed) give_back_queued_restart(s, w);
  }
  // The training loop removes the save switch once it saved: say so, once.
  if (!w.obs.save_switch_age && s.store.get(kv::save_requested(w.label)).value_or("") == "1") {
    s.store.put(kv::save_requested(w.label), "0", s.now);
    s.store.add_event(s.now, "save", w.label, "info",
                      "save switch removed by the training loop: checkpoint taken (step " +
                          (w.progress.step ? std::to_string(*w.progress.step) : std::string("?")) +
                          ")");
  }
  JsonWriter view;
  view.begin_object().key("entries").begin_array();
  for (const auto& e : w.obs.entries)
    view.begin_object()
        .key("id")
        .value(e.display_id())
        .key("nodes")
        .value(e.nodes)
        .key("reason")
        .value(e.reason_shown())
        .key("state")
        .value(e.state)
        .end_object();
  view.end_array().key("node_speeds").raw(shown_speeds_json(w.label, w.speeds, w.speeds_shown));
  // How many nodes were judged: the speeds shown are only the slow ones, so a job judged healthy
  // is told apart from one not judged at all.
  if (w.speeds) view.key("nodes_judged").value(static_cast<std::uint64_t>(w.speeds->judged()));
  s.store.put(kv::job_view(w.label), view.end_object().take(), s.now);
  record_goodput(s, w);
  // The job's progress is not read after this phase: moved into the store, not copied.
  s.store.put_progress(w.label, std::move(w.progress), s.now);
}

}  // namespace

void record_phase(CycleState& s) {
  Executor executor(s.config, s.store, s.slurm, s.now);
  s.store.transaction([&] {
    resolve_cleared(s, executor);
    for (auto& w : s.work) remember_job(s, w);
    for (const auto& [key, json] : s.snapshots) s.store.put(key, json, s.now);
    s.store.put(kv::kSlurmFailures, std::to_string(s.slurm_failures), s.now);
    s.store.put(kv::kSlurmFormat, s.slurm.text_mode() ? "text" : "json", s.now);
    s.store.put(kv::kClock, s.clock_reading.to_json(), s.now);
  });
}

}  // namespace llmwatch
