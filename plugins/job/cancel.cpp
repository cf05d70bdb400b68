// cancel: `scancel` the hung or broken task. Slurm sends SIGTERM, then SIGKILL after its
// KillWait, so the job gets its grace period without llmwatch sleeping on it. Where the plan
// restarts the run and an array's next task starts by itself, that task is first kept off the
// nodes a restart excludes: Slurm starts it within a second of the cancel.
// Config: none (the [[job]] on_* lists choose it).
#include "action.h"
#include "job/exclusions.h"
#include "registry.h"
#include "rules/cancel_held.h"

namespace llmwatch {
namespace {

class CancelAction : public ActionPlugin {
 public:
  std::string name() const override { return "cancel"; }
  std::string help() const override { return "scancel the job's running task"; }
  HourlyBudget budget() const override { return HourlyBudget::Cancels; }
  bool manual() const override { return true; }
  // One cancel a task; one more each time a cancel of it did not hold (rules/cancel_held.h).
  std::string idem_key(const ActionRequest& r) const override {
    return cancel_key(task_identity(r), r.finding.kind == "cancel-not-held" ? r.finding.cause : "");
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task) return {ActionState::Skipped, "no running task to cancel"};
    std::string id = r.task->display_id();
    // The array's next task starts as soon as this one leaves: kept off first (#30).
    std::string kept_off;
    if (r.restarts_after_cancel)
      if (const SlurmJob* next = next_array_task(r))
        kept_off = keep_pending_task_off(*next, r.exclude, ctx.slurm);
    if (auto cancel = ctx.slurm.cancel(id); !cancel) return {ActionState::Failed, cancel.error()};
    return {ActionState::Done,
            "scancel " + id + (kept_off.empty() ? "" : "; its next task " + kept_off)};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<CancelAction>());

}  // namespace llmwatch
