// requeue: `scontrol requeue` the running task, an alternative to cancel + restart for jobs
// submitted with --requeue. Slurm holds a requeued job back ~2 minutes (its BeginTime is set
// about 121 s ahead) before it can start again, so cancel + restart is faster for arrays. The
// task keeps its id and so its log, which Slurm truncates at the new start unless the job
// appends (--open-mode=append, JobFileAppend=1): seen on the local cluster, 2026-12-02. So the
// log's last lines are kept first (job/kept_log.h), as the dump keeps the stacks.
// Pending again, it is kept off the nodes the cycle excludes, as a restart is (#30).
#include "action.h"
#include "job/exclusions.h"
#include "job/kept_log.h"
#include "registry.h"

namespace llmwatch {
namespace {

class RequeueAction : public ActionPlugin {
 public:
  std::string name() const override { return "requeue"; }
  std::string help() const override {
    return "scontrol requeue the running task (Slurm starts it again after ~2 minutes)";
  }
  // A requeue is a restart of the task: it counts in the restart budgets, so a run that hangs
  // after every start stops at max_restarts and asks for a human.
  HourlyBudget budget() const override { return HourlyBudget::Restarts; }
  // Slurm starts a requeued task under the same id: each start (id and start time) is a task
  // of its own, which may hang again and be requeued again.
  std::string idem_key(const ActionRequest& r) const override {
    return "requeue:" + task_identity(r);
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task || !r.task->running()) return {ActionState::Skipped, "no running task to requeue"};
    // Before the requeue: once Slurm starts the task again, the file holds only the new run's.
    // A log that cannot be kept holds nothing up.
    const std::string kept = keep_task_log(*r.task, ctx);
    if (auto requeue = ctx.slurm.control("requeue", r.task->display_id()); !requeue)
      return {ActionState::Failed, requeue.error()};
    // Slurm takes a list only for a pending task: it is set once the requeue made it one.
    const std::string kept_off = keep_pending_task_off(*r.task, r.exclude, ctx.slurm);
    return {ActionState::Done,
            "scontrol requeue " + r.task->display_id() +
                " (Slurm delays its restart ~2 min, and empties its log then unless the job "
                "appends; " +
                kept + ")" + (kept_off.empty() ? "" : ", " + kept_off)};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<RequeueAction>());

}  // namespace llmwatch
