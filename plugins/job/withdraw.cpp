// withdraw: `scancel` a restart llmwatch queued behind a dying task (rules/queued_restart.h)
// once that task went on instead: it steps on past its crash, or Slurm requeued it. Only while
// the queued job is PENDING: one that started is a run, and a person decides about it.
// Config: none (the policy chooses it for a "restart-unneeded" finding).
#include "action.h"
#include "registry.h"
#include "rules/queued_restart.h"
#include "store/keys.h"
#include "store/store.h"

namespace llmwatch {
namespace {

class WithdrawAction : public ActionPlugin {
 public:
  std::string name() const override { return "withdraw"; }
  std::string help() const override {
    return "scancel a restart llmwatch queued behind a crashed task that went on after all";
  }
  std::string idem_key(const ActionRequest& r) const override {
    return "withdraw:" + task_identity(r);
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task) return {ActionState::Skipped, "no queued restart to withdraw"};
    const std::string id = r.task->control_id();  // a pending array's "1001_[8]" as it is
    if (!r.task->pending())
      return {ActionState::Skipped,
              r.task->display_id() + " is " + r.task->state + ": it started, not withdrawn"};
    if (auto cancel = ctx.slurm.cancel(id); !cancel) return {ActionState::Failed, cancel.error()};
    std::string detail = "scancel " + id + " (queued, never started)";
    // The restart that queued it never started a run: it gives back what it took of the
    // job's max_restarts (and of max_restarts_per_hour).
    auto queued = QueuedRestart::from_text(ctx.store.get(kv::queued_restart(r.job)).value_or(""));
    if (queued && submitted_as(*r.task, queued->successor) &&
        ctx.store.withdraw_action(restart_key(queued->after_task, queued->after_start), detail,
                                  ctx.now))
      detail += "; the restart no longer counts toward max_restarts";
    return {ActionState::Done, detail};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<WithdrawAction>());

}  // namespace llmwatch
