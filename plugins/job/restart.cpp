// restart: get the run going again after its task was cancelled or died.
// - An array throttled with %N that still has pending tasks restarts by itself: the next
//   task starts when the old one leaves; we say so, and keep its pending tasks off the nodes
//   a resubmission would exclude (scontrol update of their ExcNodeList).
// - Otherwise we resubmit the same batch script with the job's name, workdir, partition,
//   account, node count, time limit and output pattern, plus --exclude of nodes that are
//   drained or down, that a crash or the ledger implicated, or that the job excluded itself
//   (a `scontrol requeue`d job would instead wait ~2 minutes before Slurm lets it start again).
// - A job with no script file (sbatch --wrap, a script on stdin) is resubmitted from the copy
//   of its script Slurm kept (job/batch_script.h).
// - It runs as the job's owner (sbatch --uid when llmwatch is root) with --export=NONE.
// - After a crash the log attributes to nodes, it is queued behind the dying task
//   (--dependency=afternotok), so that Slurm starts it the moment that task is gone
//   (rules/queued_restart.h).
#include <algorithm>
#include <filesystem>

#include "action.h"
#include "job/batch_script.h"
#include "job/exclusions.h"
#include "registry.h"
#include "rules/queued_restart.h"
#include "slurm/hostlist.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/identity.h"
#include "util/units.h"

namespace llmwatch {
namespace {

// What Slurm does in a restart's place for such an array: the words both the done restart and
// a refused one say (happens_anyway).
std::string starts_by_itself(const SlurmJob& next) {
  return "next task of array " + next.display_id() + " starts by itself";
}

// The run's tasks as they stand when the restart is about to submit. A wake replays its tick's
// squeue answer, up to half an interval old, which cannot list a run its owner resubmitted by
// hand since: the restart the wake made then started beside it (two runs, one checkpoint
// directory). On such an answer Slurm is asked now for the tasks of the run's name and owner,
// and they take the place of that name's entries; a tick's own answer is used as it is.
Result<std::vector<SlurmJob>> tasks_now(const ActionRequest& r, ActionContext& ctx) {
  if (r.queue_age_s <= 0) return r.queue;
  const SlurmJob& t = *r.task;
  auto listed = ctx.slurm.tasks_named(t.name, t.user);
  if (!listed.ok())
    return Error{"cannot tell whether another run of " + r.job +
                 " started since the queue was read " + format_whole(r.queue_age_s) + " s ago (" +
                 listed.error + "): the restart waits"};
  std::vector<SlurmJob> out;
  for (auto& q : listed.jobs)
    if (q.present() && q.name == t.name) out.push_back(std::move(q));  // squeue kept the owner's
  for (const auto& q : r.queue)  // what the name does not find (a job watched by its id)
    if (q.name != t.name) out.push_back(q);
  return out;
}

bool cancelled_in_plan(const ActionRequest& r) {
  return std::any_of(r.done.begin(), r.done.end(),
                     [](const std::string& d) { return d.rfind("cancel: done", 0) == 0; });
}

// Slurm picks the next task's nodes: it is kept off those a resubmission would exclude (by
// this plan's cancel, before the task it follows left; else here, for the tasks after it).
std::string next_task_starts(const ActionRequest& r, const SlurmJob& next, ActionContext& ctx) {
  const std::string kept_off =
      cancelled_in_plan(r) ? "" : keep_pending_task_off(next, r.exclude, ctx.slurm);
  return starts_by_itself(next) + (kept_off.empty() ? "" : ", " + kept_off);
}

class RestartAction : public ActionPlugin {
 public:
  std::string name() const override { return "restart"; }
  std::string help() const override {
    return "start the run again once its task has ended (or this plan cancelled it), as its "
           "owner, off bad nodes";
  }
  HourlyBudget budget() const override { return HourlyBudget::Restarts; }
  bool manual() const override { return true; }
  std::string idem_key(const ActionRequest& r) const override {
    return r.task ? restart_key(r.task->display_id(), r.task->start_time)
                  : "restart:" + r.job + ":" + r.finding.key;
  }
  // Slurm starts it whether or not the budget allows the restart: a refused restart still
  // keeps it off bad nodes (before, it started on whichever Slurm picked), never in a dry run.
  std::string happens_anyway(const ActionRequest& r, ActionContext& ctx) override {
    const SlurmJob* next = next_array_task(r);
    if (!next) return "";
    return "the " +
           (ctx.config.dry_run ? starts_by_itself(*next) : next_task_starts(r, *next, ctx));
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    bool cancelled_here = cancelled_in_plan(r);
    if (const SlurmJob* next = next_array_task(r))
      return {ActionState::Done, next_task_starts(r, *next, ctx)};
    if (!r.task) return {ActionState::Skipped, "no earlier run of " + r.job + " known to resubmit"};
    // Never a second run beside a live one (#26: a handled traceback had the run resubmitted
    // while it still trained, and two runs wrote one checkpoint directory). The restart waits
    // for the end of every task of the run, but the one this plan has just cancelled.
    // The task a crash ends may be waited on by Slurm instead (r.queue_behind): the restart
    // is queued behind it, never beside it.
    auto queue = tasks_now(r, ctx);
    if (!queue) return {ActionState::Waiting, queue.error()};
    std::optional<SlurmJob> behind;
    for (const auto& q : *queue) {
      if (cancelled_here && q.display_id() == r.task->display_id()) continue;
      if (r.queue_behind && !behind && q.running() && q.run_key() == r.task->run_key()) {
        behind = q;
        continue;
      }
      ActionOutcome wait{ActionState::Waiting, q.display_id() + " of " + r.job + " is " + q.state +
                                                   ": the restart waits for its end"};
      if (q.running()) wait.awaits = q.display_id();
      return wait;
    }
    const SlurmJob& t = *r.task;
    // Identity: the run is resubmitted as its owner, never as llmwatch's user (root under
    // the systemd unit), and with none of llmwatch's environment (its secrets).
    std::vector<std::string> args = {"--job-name=" + t.name, "--export=NONE"};
    if (running_as_root()) {
      auto identity = owner_identity_args(t);
      if (!identity) return {ActionState::Failed, "no resubmission: " + identity.error()};
      args.insert(args.end(), identity->begin(), identity->end());
    } else if (!t.user.empty() && t.user != current_user_name()) {
      return {ActionState::Failed, t.display_id() + " belongs to " + t.user +
                                       ": only its owner (or root) can resubmit it"};
    }
    // An array task is continued as the next task id, so SLURM_ARRAY_TASK_ID and %a keep
    // counting and the training script's resume logic sees what it expects.
    if (t.array_task_id) args.push_back("--array=" + std::to_string(*t.array_task_id + 1));
    if (t.node_count > 0) args.push_back("--nodes=" + std::to_string(t.node_count));
    if (t.time_limit_minutes > 0) args.push_back("--time=" + std::to_string(t.time_limit_minutes));
    // Off the nodes the cycle excludes and those its submitter excluded (sbatch --exclude):
    // a resubmission without them could land where its owner said never to run.
    std::string exclude = compress_hostlist(exclusions_for(t, r.exclude, ctx.slurm).merged);
    if (!exclude.empty()) args.push_back("--exclude=" + exclude);
    if (!t.workdir.empty()) args.push_back("--chdir=" + t.workdir);
    if (!t.partition.empty()) args.push_back("--partition=" + t.partition);
    if (!t.account.empty()) args.push_back("--account=" + t.account);
    if (!t.std_out.empty()) args.push_back("--output=" + t.std_out);
    if (!t.std_err.empty()) args.push_back("--error=" + t.std_err);
    // A log named with no %j (train.out) is the crashed run's file too: Slurm's default open
    // mode truncated it, and the traceback its post-mortem named with it. Appended, the new
    // run's lines follow the old ones, where llmwatch's cursor on that file already stands.
    // A file of the new job's own (%j) does not exist yet: there the two modes are one.
    args.push_back("--open-mode=append");
    // afternotok: a task that ends well after all (exit 0) has Slurm withdraw the queued run.
    if (behind) {
      args.push_back("--dependency=afternotok:" + behind->display_id());
      args.push_back("--kill-on-invalid-dep=yes");
    }
    auto script = script_to_resubmit(t, r.job, ctx);  // a copy of Slurm's for one with none
    if (!script) return {ActionState::Failed, script.error()};
    args.push_back(script->path);
    auto submitted = ctx.slurm.submit(args);
    std::error_code ignored;  // a copy left behind holds nothing Slurm does not keep
    if (script->copy && (submitted.job_id || !script->kept))
      std::filesystem::remove(script->path, ignored);
    if (!submitted.job_id) return {ActionState::Failed, submitted.error};
    const std::string id = std::to_string(*submitted.job_id);
    if (behind)
      ctx.store.put(
          kv::queued_restart(r.job),
          QueuedRestart{id, behind->display_id(), behind->start_time, exclude, ctx.now}.to_text(),
          ctx.now);
    std::string detail = (behind ? "queued " : "resubmitted ") +
                         (script->copy ? "Slurm's copy of " + t.display_id() + "'s script" +
                                             (script->kept ? " (kept while it ran)" : "")
                                       : script->path) +
                         " as job " + id;
    if (behind) detail += ", to start once " + behind->display_id() + " is gone";
    if (!exclude.empty()) detail += (behind ? ", excluding " : " excluding ") + exclude;
    return {ActionState::Done, detail};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<RestartAction>());

}  // namespace llmwatch
