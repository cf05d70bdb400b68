#include <algorithm>
#include <map>
#include <set>

#include "cycle/crash_suspects.h"
#include "cycle/executor.h"
#include "cycle/failure_domain.h"
#include "cycle/phases.h"
#include "policy/policy.h"
#include "policy/restart_exclusion.h"
#include "probes/checkpoints.h"
#include "rules/attribution.h"
#include "rules/cancel_held.h"
#include "rules/job_rules.h"
#include "rules/launch_failure.h"
#include "rules/queued_restart.h"
#include "rules/straggler.h"
#include "slurm/hostlist.h"
#include "slurm/partition_room.h"
#include "slurm/slurm_node.h"
#include "store/store.h"
#include "util/units.h"

namespace llmwatch {
namespace {

const JobWork* work_for(const CycleState& s, const std::string& subject) {
  for (const auto& w : s.work)
    if (w.label == subject) return &w;
  return nullptr;
}

// The nodes a crash is blamed on: the post-mortem's suspects once the task ended; for a
// crash seen in a log while the task runs, attribution over its last lines. An OOM or a
// Python error blames no node. A hang in a task that printed a crash it did not step past is
// that crash's (a rank died, its peers wait in the collective): the hang's restart, which
// usually runs first, stays off the crash's nodes.
std::vector<Suspect> suspects_for(const CycleState& s, const Finding& f) {
  const JobWork* w = work_for(s, f.subject);
  if (!w) return {};
  if (f.kind == "ended") return w->ended ? w->ended->suspects : std::vector<Suspect>{};
  const bool hang_after_crash =
      f.kind == "hung" && !w->progress.crash.empty() && !w->progress.trained_past_crash();
  if (f.kind != "crashed" && !hang_after_crash) return {};
  if (!may_be_node_fault(w->progress.crash)) return {};
  return crash_suspects(s, *w);
}

// The nodes a restarted run cannot land on whatever this excludes: those out of service and
// those its submitter excluded (sbatch --exclude, where squeue says). Excluding one of these
// again takes none of the partition's spare nodes.
std::vector<std::string> avoided_by(const CycleState& s, const std::optional<SlurmJob>& task) {
  std::vector<std::string> out = s.unusable;
  if (task && task->excluded_nodes)
    for (auto& node : hosts_in(*task->excluded_nodes)) out.push_back(std::move(node));
  return out;
}

// The room a restart of `task` has to keep it off suspects. squeue's text does not say what the
// task excludes itself, so those nodes counted as spare: scontrol is asked now, for this restart
// alone (the restart action asked it anyway, to keep the list), and the answer kept on the task.
int room_for(const CycleState& s, const JobWork& w, std::optional<SlurmJob>& task) {
  if (!task || task->excluded_nodes || !s.nodes_ok()) return w.spare_nodes;
  task->excluded_nodes = own_excluded_nodes(*task, s.slurm);
  return task->excluded_nodes ? spare_nodes(s.nodes->nodes, *task) : w.spare_nodes;
}

// The suspicion ledger: a crash charges an incident to the nodes it is attributed to, and
// to no other (the lemon rule counts these within lemon_window). One incident per node per
// task end: the crash seen while the task ran and its end are one failure (#26: one NCCL
// crash counted twice reached the ledger's threshold alone).
void record_crash_incidents(CycleState& s, const Finding& f) {
  for (const auto& suspect : suspects_for(s, f))
    s.store.add_incident(s.now, suspect.node, f.episode,
                         f.subject + " " + f.kind + ", attributed to " + suspect.node + ": " +
                             (suspect.why.empty() ? "" : suspect.why.front()));
}

// A launch that failed on a node charges it an incident, once per failure (charges_the_node):
// the lemon rule then counts it when the node is back in service and fails again.
void record_launch_incidents(CycleState& s, const Finding& f, const JobWork& w) {
  for (const auto& n : w.obs.launch_failure.drained)
    if (charges_the_node(n))
      s.store.add_incident(s.now, n.name, f.episode,
                           f.subject + " launch-failed on " + n.name + ": " + n.reason);
}

// A step loop is the step's, not the nodes': runs that stopped at the same step on whatever
// nodes they got. What their crashes charged to those nodes is withdrawn, so that the loop
// neither keeps healthy nodes out of every restart nor drains one by the lemon rule (a device
// assert at a bad sample is a GPU error in the log of whichever node holds that rank).
void withdraw_loop_incidents(CycleState& s, const Finding& f, const JobWork& w) {
  const JobProgress& p = w.progress;
  const std::string why = w.label + "'s runs " + p.end_step_tasks + " stopped at step " +
                          (p.end_step ? std::to_string(*p.end_step) : std::string("?")) +
                          " every time: the step, not the node";
  s.store.withdraw_incidents(s.now, step_loop_tasks(f, p), why);
}

// One old checkpoint to delete, as the cleanup action takes it (plugins/storage/cleanup.cpp).
ActionRequest cleanup_request(const StorageSettings& storage, const Checkpoint& k, double now) {
  ActionRequest r;
  r.job = "storage:" + storage.path;
  r.storage = &storage;
  r.path = k.path;
  r.finding = make_finding(r.job, r.job, "cleanup", Severity::Info,
                           "keep_last " + std::to_string(std::max(2, storage.keep_last)));
  r.finding.evidence = {format_size(k.bytes)};
  r.episode = now;
  return r;
}

void record_findings(CycleState& s, std::map<std::string, double>& first_seen) {
  s.store.transaction([&] {
    std::vector<const Finding*> loops;
    for (const auto& f : s.findings) {
      bool is_new = s.store.observe(f, s.now) == FindingChange::New;
      // Charged once per task end (Store::add_incident), when its suspects are known: as the
      // finding is raised, or, for an end that waited for its node-check, in the cycle whose
      // check completed its post-mortem.
      const JobWork* w = work_for(s, f.subject);
      bool suspects_known = is_new || (f.kind == "ended" && w && w->ended_updated);
      if (suspects_known && ((f.kind == "ended" && f.severity != Severity::Unknown) ||
                             (f.kind == "crashed" && f.severity == Severity::Critical)))
        record_crash_incidents(s, f);
      if (is_new && f.kind == "launch-failed" && w) record_launch_incidents(s, f, *w);
      if (!is_new) continue;
      if (f.cause == kStepLoop) loops.push_back(&f);
      ++s.result.new_findings;
      // Where the run's lost time starts: its last step, exact (the series is thinned).
      std::optional<std::pair<double, std::int64_t>> last_step;
      if (w && w->progress.step && w->progress.last_progress > 0)
        last_step = {w->progress.last_progress, *w->progress.step};
      s.store.add_finding_event(s.now, f, last_step);
    }
    // After every finding's charge: the loop's last end is charged in this cycle too.
    for (const Finding* f : loops)
      if (const JobWork* w = work_for(s, f->subject)) withdraw_loop_incidents(s, *f, *w);
    for (const auto& row : s.store.firing()) first_seen[row.key] = row.first_seen;
  });
}

// A slow node (#28): on_straggler = "alert" only tells, with the cost sum. "evict", when the
// sum says it pays: ask for a save first (a save switch) and wait for its checkpoint, then
// cancel, restart without the node, and (evict_node) drain it and charge the ledger.
std::vector<std::string> straggler_plan(const JobWork& w, const ActionRequest& base, double now) {
  // Never when the run would not fit without the node (no spare node known in its partition),
  // nor before it stayed slow for evict_after.
  if (w.settings->on_straggler != "evict" || !w.straggler || !w.eviction || !w.eviction->evict ||
      w.spare_nodes <= 0 ||
      now - base.episode < static_cast<double>(w.settings->evict_after.count()))
    return {"alert"};
  bool saved = w.settings->save_switch.empty() || w.progress.checkpoint_done > base.episode;
  if (!saved) return {"save", "alert"};
  return {"cancel", "restart", "alert"};
}

// The evicted node, once the plan cancelled its run: drained with the reason, under the
// drain budget, and one incident in the ledger.
void evict_node(CycleState& s, Executor& executor, const JobWork& w, const ActionRequest& base) {
  const std::string& node = w.straggler->node;
  ActionRequest drain;
  drain.finding = base.finding;
  drain.finding.summary = "slow " + straggler_summary(*w.straggler);
  drain.episode = base.episode;
  drain.job = node;
  s.result.actions += executor.run_plan(drain, {"drain"});
  s.store.add_incident(
      s.now, node, base.task ? task_identity(base) : w.label,
      "evicted from " + w.label + ": " + drain.finding.summary + "; " + w.eviction->text);
}

// Whether a crash's restart may be queued behind its dying task (rules/queued_restart.h):
// when nothing its end would show can change the restart. The nodes to avoid are known: the
// log names them, or a node-check in the dying task spoke for each of its nodes (else the
// end's node-check finds them), or there is no node-check at all ([gpu] off) and the crash is
// one no rank survives (an NCCL or CUDA error): the end would then have only the lines and
// Slurm's word, which the cycle has now (#30: such a crash waited for Slurm to say the task
// ended). Not a traceback or an out-of-memory error: a trainer may catch it and step on, and
// its end says whether it did (a restart queued behind it would be withdrawn again). Nodes that
// lines read later name are added to the queued job's list while it waits (restart-keep-off). And
// the task stepped (a death before the first step counts toward the quick-death loop) and does not
// stop where the runs before it did (a step loop, said at its end, restarts nothing). `named`: the
// failure's own suspects.
bool may_queue_behind(const CycleState& s, const Finding& f, const JobWork& w,
                      const std::vector<Suspect>& named) {
  return f.kind == "crashed" && f.severity == Severity::Critical && w.obs.running &&
         w.progress.step && !ends_a_step_loop(*w.settings, w.progress) &&
         (!named.empty() || w.dying_checked ||
          (!s.config.gpu.enabled && fatal_crash_signature(w.progress.crash)));
}

// What to do about one finding, and with what request.
std::vector<std::string> plan_for(const CycleState& s, const Finding& f, ActionRequest& base) {
  if (f.severity == Severity::Unknown) return {};  // unknown never acts by itself
  if (auto node_plan = s.node_plans.find(f.key); node_plan != s.node_plans.end()) {
    base.job = f.subject;  // the node
    return node_plan->second;
  }
  const JobWork* w = work_for(s, f.subject);
  if (!w) {
    base.job = f.subject;
    if (f.key.rfind("llmwatch/successor", 0) == 0) base.queue = s.self_pending;
    return actions_for(f, JobSettings{});
  }
  base.job = w->label;
  base.settings = w->settings;
  base.progress = &w->progress;
  base.task = w->obs.running ? w->obs.running : w->last;  // a gone job: its last run
  // A cancel issued again is for the very task whose cancel did not hold, whichever of the
  // job's tasks runs first in the queue (its restart may be running too); none if it is gone.
  if (f.kind == "cancel-not-held") {
    base.task.reset();
    for (const auto& e : w->obs.entries)
      if (e.run_key() == not_held_run_key(f)) base.task = e;
  }
  // The task Slurm holds after its failed launch, which "relaunch" releases.
  if (f.kind == "launch-failed") {
    base.task.reset();
    if (const SlurmJob* held = launch_failed_entry(w->obs.entries)) base.task = *held;
  }
  // The queued restart a "restart-unneeded" finding withdraws.
  if (f.kind == "restart-unneeded") {
    base.task.reset();
    for (const auto& e : w->obs.entries)
      if (submitted_as(e, f.cause)) base.task = e;
  }
  // The queued restart a "restart-keep-off" finding keeps off the crash's later suspects and
  // the ledger's new repeat offenders, as far as the run still fits: the nodes it was queued
  // off take the partition's room first, then the crash's, then the ledger's.
  if (f.kind == "restart-keep-off") {
    base.task.reset();
    for (const auto& e : w->obs.entries)
      if (submitted_as(e, f.episode)) base.task = e;
    std::vector<Suspect> suspects;
    if (w->queued_restart)
      for (auto& node : hosts_in(w->queued_restart->excluded)) suspects.push_back({node, 1, {}});
    const auto named = hosts_in(f.cause);
    const auto crash = crash_suspects(s, *w);
    auto of_crash = [&](const std::string& node) {
      return std::any_of(crash.begin(), crash.end(),
                         [&](const Suspect& c) { return c.node == node; });
    };
    for (const auto& node : named)
      if (of_crash(node)) suspects.push_back({node, 0.8, {}});
    for (const auto& node : named)
      if (!of_crash(node)) suspects.push_back({node, 0.5, {}});
    // What the crashed task excludes itself is free; what the queued job was kept off besides
    // took its room when it was queued.
    std::optional<SlurmJob> crashed = w->obs.running;
    const int room = room_for(s, *w, crashed);
    auto choice = choose_exclusions(suspects, room, avoided_by(s, crashed));
    base.exclude = choice.nodes;
    if (!choice.note.empty()) base.finding.evidence.push_back(choice.note);
    return actions_for(f, *w->settings);
  }
  base.queue = w->obs.entries;
  base.queue_age_s = s.queue ? s.queue->age_s : 0;
  auto plan =
      f.kind == "straggler" ? straggler_plan(*w, base, s.now) : actions_for(f, *w->settings);
  // A restart keeps the run off the nodes its failure is attributed to (a crash's suspects),
  // and after any failure, a hang or a slow node too, off the nodes the ledger holds with
  // repeated incidents (#30: a hung run was restarted onto one): the next run does not land on
  // a bad node while it waits for the lemon drain. The failure's own suspects come first; never
  // all of its nodes, never so many that it no longer fits.
  // So do a requeue and a relaunch: each starts the run again, on nodes Slurm picks.
  if (std::any_of(plan.begin(), plan.end(), [](const std::string& a) {
        return a.rfind("restart", 0) == 0 || a == "requeue" || a == "relaunch";
      })) {
    auto suspects = suspects_for(s, f);
    base.queue_behind = may_queue_behind(s, f, *w, suspects);
    if (f.kind == "straggler" && w->straggler)
      suspects.insert(suspects.begin(), {w->straggler->node, 1.0, {"slow node"}});
    for (const auto& node : ledger_suspects(s))
      if (std::none_of(suspects.begin(), suspects.end(),
                       [&](const Suspect& x) { return x.node == node.node; }))
        suspects.push_back(node);
    const int room = room_for(s, *w, base.task);
    auto choice = choose_exclusions(suspects, room, avoided_by(s, base.task));
    base.exclude.insert(base.exclude.end(), choice.nodes.begin(), choice.nodes.end());
    base.restarts_after_cancel = std::any_of(plan.begin(), plan.end(), [](const std::string& a) {
      return a.rfind("cancel", 0) == 0;  // "cancel+15m" too
    });
    if (!choice.note.empty()) base.finding.evidence.push_back(choice.note);
  }
  if (f.kind == "straggler") return plan;
  std::vector<Finding> same_job;
  for (const auto& g : s.findings)
    if (g.subject == w->label) same_job.push_back(g);
  suppress_restarts_in_crash_loop(same_job, plan);
  return plan;
}

}  // namespace

void act_phase(CycleState& s) {
  std::map<std::string, double> first_seen;
  record_findings(s, first_seen);
  // Node plans first: a faulty node is drained before the job that ran on it is restarted.
  std::vector<const Finding*> order;
  for (const auto& f : s.findings) order.push_back(&f);
  std::stable_partition(order.begin(), order.end(),
                        [&](const Finding* f) { return s.node_plans.count(f->key) > 0; });
  Executor executor(s.config, s.store, s.slurm, s.now);
  executor.set_fence([&s]() -> const std::string& { return s.fenced(); });
  executor.set_remote_budget(&s.remote);
  for (const Finding* f : order) {
    if (!s.fenced().empty()) break;
    Status acted = run_guarded("acting on " + f->key, [&] {
      ActionRequest base;
      base.finding = *f;
      base.episode = first_seen[f->key];
      base.exclude = s.unusable;
      auto plan = plan_for(s, *f, base);
      s.result.actions += executor.run_plan(base, plan);
      // Only once the cancel happened (not a dry run, not refused by a budget).
      if (f->kind == "straggler" && std::count(plan.begin(), plan.end(), "cancel") &&
          s.store.count_actions("cancel", base.job, base.episode) > 0)
        if (const JobWork* w = work_for(s, f->subject); w && w->straggler)
          evict_node(s, executor, *w, base);
    });
    if (!acted) s.errors.push_back(acted.error());
  }
  s.result.waiting = executor.waiting();
  s.result.awaited = executor.awaited();
  s.disproved = executor.disproved();
  if (!s.fenced().empty()) {
    s.errors.push_back("not acting: " + s.fenced());
    return;  // nor deleting checkpoints: the holder of the lease decides that
  }
  // Old checkpoints go only after the findings that need them were acted on: each one the
  // storage check's scan allows is a cleanup action (journaled first, once per checkpoint).
  for (const auto& c : s.cleanups) {
    Status cleaned = run_guarded("checkpoint cleanup of " + c.settings->path, [&] {
      for (const auto& k : cleanup_candidates(c.scan, c.settings->keep_last))
        s.result.actions += executor.run_plan(cleanup_request(*c.settings, k, s.now), {"cleanup"});
    });
    if (!cleaned) s.errors.push_back(cleaned.error());
  }
}

}  // namespace llmwatch
