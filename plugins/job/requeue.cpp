// requeue: `scontrol requeue` the running task, an alternative to cancel + restart for jobs
// submitted with --requeue. Slurm holds a requeued job back ~2 minutes (its BeginTime is set
// about 121 s ahead) before it can start again, so cancel + restart is faster for arrays.
#include "action.h"
#include "registry.h"

namespace llmwatch {
namespace {

class RequeueAction : public ActionPlugin {
 public:
  std::string name() const override { return "requeue"; }
  std::string help() const override {
    return "scontrol requeue the running task (Slurm starts it again after ~2 minutes)";
  }
  std::string idem_key(const ActionRequest& r) const override {
    return "requeue:" + (r.task ? r.task->display_id() : r.job);
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    if (!r.task || !r.task->running()) return {ActionState::Skipped, "no running task to requeue"};
    if (auto requeue = ctx.slurm.control("requeue", r.task->display_id()); !requeue)
      return {ActionState::Failed, requeue.error()};
    return {ActionState::Done,
            "scontrol requeue " + r.task->display_id() + " (Slurm delays its restart ~2 min)"};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<RequeueAction>());

}  // namespace llmwatch
