// relaunch: `scontrol release` a task Slurm held after its launch failed on a node
// (rules/launch_failure.h). Slurm drained that node, so the released task starts elsewhere; as
// a restart does, it is first kept off the nodes the cycle excludes (the ledger's suspects,
// #30), besides those it excludes itself.
// Only that task, and only while Slurm still holds it for that reason: a hold of llmwatch's own
// (a crash loop) or a person's is never released here, and the kill switch is left alone
// (`release` does both, for people). Config: on_launch_failed.
#include "action.h"
#include "job/exclusions.h"
#include "registry.h"

namespace llmwatch {
namespace {

class RelaunchAction : public ActionPlugin {
 public:
  std::string name() const override { return "relaunch"; }
  std::string help() const override {
    return "release a task Slurm held after its launch failed on a node it drained";
  }
  // A new start, as a restart is: held to the same budgets.
  HourlyBudget budget() const override { return HourlyBudget::Restarts; }
  // Once a failure: a requeue sets the task's submit time, which its finding's episode holds.
  std::string idem_key(const ActionRequest& r) const override {
    return "relaunch:" + r.job + ":" + r.finding.episode;
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task || !r.task->launch_failed())
      return {ActionState::Skipped, "no task Slurm holds after a failed launch"};
    const std::string id = r.task->control_id();
    // A list that could not be set is said, and the task released all the same: waiting for
    // a person loses more than a start that may meet a suspect the drain has not taken out.
    const std::string kept_off = keep_pending_task_off(*r.task, r.exclude, ctx.slurm);
    if (auto done = ctx.slurm.control("release", id); !done)
      return {ActionState::Failed, done.error()};
    return {ActionState::Done, "released " + id + ": Slurm starts it on other nodes" +
                                   (kept_off.empty() ? "" : ", " + kept_off)};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<RelaunchAction>());

}  // namespace llmwatch
