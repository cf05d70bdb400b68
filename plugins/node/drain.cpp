// drain: take a node out of service with a reason a human understands (take_out.h), and
// undrain: return one llmwatch drained to service.
#include "node/take_out.h"
#include "registry.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {
namespace {

class DrainAction : public TakeOutAction {
 public:
  std::string name() const override { return "drain"; }
  std::string help() const override {
    return "take a node out of service with an llmwatch: reason (never over someone else's)";
  }

 protected:
  ActionOutcome take_out(const ActionRequest& r, ActionContext& ctx, const std::string& why,
                         bool ours) override {
    if (ours) return {ActionState::Done, r.job + " already drained by llmwatch"};
    if (auto drain = ctx.slurm.update_node(r.job, "drain", why); !drain)
      return {ActionState::Failed, drain.error()};
    mark_taken_out(r, ctx);
    return {ActionState::Done, "drained " + r.job + " (reason \"" + why + "\")"};
  }
};

class UndrainAction : public ActionPlugin {
 public:
  std::string name() const override { return "undrain"; }
  ActionTarget target() const override { return ActionTarget::Node; }
  std::string help() const override { return "return a node llmwatch drained to service"; }
  std::string idem_key(const ActionRequest& r) const override {
    return "undrain:" + r.job + ":" + std::to_string(static_cast<long long>(r.episode));
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    auto show = ctx.slurm.show_node(r.job);
    if (show.empty()) return {ActionState::Failed, "scontrol show node " + r.job + " gave nothing"};
    const std::string reason = show["Reason"];
    if (!undrain_allowed(reason, ctx.config.gpu.undrain_kill_task_failed))
      return {ActionState::Skipped, r.job + " is drained for a reason llmwatch did not set: " +
                                        sanitize_line(reason, 120)};
    if (auto resume = ctx.slurm.update_node(r.job, "resume"); !resume)
      return {ActionState::Failed, resume.error()};
    ctx.store.put(kv::drained(r.job), "", ctx.now);
    return {ActionState::Done,
            "returned " + r.job + " to service (was: " + sanitize_line(reason, 120) + ")"};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<DrainAction>());
LLMWATCH_REGISTER_ACTION(std::make_unique<UndrainAction>());

}  // namespace llmwatch
