// keep-off: keeps a restart llmwatch queued behind a dying task (rules/queued_restart.h) off
// nodes the crash was attributed to after it was queued, while it is PENDING: one
// `scontrol update ExcNodeList`, its list as Slurm holds it merged with the new nodes (an update
// replaces the list), and the record remembers the new list. Slurm places the run the moment
// the task is gone; a run that started is left to its next failure.
// Config: none (the policy chooses it for a "restart-keep-off" finding).
#include "action.h"
#include "job/exclusions.h"
#include "registry.h"
#include "rules/queued_restart.h"
#include "slurm/hostlist.h"
#include "store/keys.h"
#include "store/store.h"

namespace llmwatch {
namespace {

class KeepOffAction : public ActionPlugin {
 public:
  std::string name() const override { return "keep-off"; }
  std::string help() const override {
    return "keep a restart llmwatch queued behind a crashed task off nodes named since";
  }
  // Once per queued job and list: a later line naming one more node is a new list.
  std::string idem_key(const ActionRequest& r) const override {
    return "keep-off:" + task_identity(r) + ":" + compress_hostlist(r.exclude);
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task) return {ActionState::Skipped, "no queued restart to keep off nodes"};
    if (!r.task->pending())
      return {ActionState::Skipped,
              r.task->display_id() + " is " + r.task->state + ": it started where Slurm put it"};
    auto queued = QueuedRestart::from_text(ctx.store.get(kv::queued_restart(r.job)).value_or(""));
    if (!queued || !submitted_as(*r.task, queued->successor))
      return {ActionState::Skipped, r.task->display_id() + " is not a restart llmwatch queued"};
    auto ex = exclusions_for(*r.task, r.exclude, ctx.slurm);
    if (!ex.own_known)
      return {ActionState::Failed, "what " + r.task->display_id() +
                                       " is kept off now is unknown: not replaced by a guess"};
    const std::string list = compress_hostlist(ex.merged);
    if (ex.adds())
      if (auto set = ctx.slurm.set_excluded_nodes(r.task->control_id(), list); !set)
        return {ActionState::Failed, set.error()};
    queued->excluded = list;
    ctx.store.put(kv::queued_restart(r.job), queued->to_text(), ctx.now);
    if (!ex.adds())
      return {ActionState::Skipped,
              r.task->display_id() + " is kept off " + list +
                  " already: nothing to add that the run can spare (the finding says what not)"};
    return {ActionState::Done, r.task->display_id() + " excluding " + list};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<KeepOffAction>());

}  // namespace llmwatch
