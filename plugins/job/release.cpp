// release: undo a hold and a kill switch so the job's array runs again. Used by humans
// (`llmwatch release JOB`) after they fixed what caused a crash loop.
#include <filesystem>

#include "action.h"
#include "registry.h"

namespace llmwatch {
namespace {

class ReleaseAction : public ActionPlugin {
 public:
  std::string name() const override { return "release"; }
  std::string help() const override { return "release held tasks and remove the kill switch"; }
  bool manual() const override { return true; }
  std::string idem_key(const ActionRequest& r) const override {
    return "release:" + r.job + ":" + r.finding.key;
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    std::string detail;
    if (r.settings && !r.settings->kill_switch.empty()) {
      std::error_code ec;
      if (std::filesystem::remove(r.settings->kill_switch, ec))
        detail = "removed " + r.settings->kill_switch;
    }
    for (const auto& q : r.queue) {
      if (!q.pending()) continue;
      std::string id = q.control_id();
      if (auto done = ctx.slurm.control("release", id); !done)
        return {ActionState::Failed, done.error()};
      detail += (detail.empty() ? "" : "; ") + std::string("released ") + id;
    }
    return detail.empty() ? ActionOutcome{ActionState::Skipped, "nothing held and no kill switch"}
                          : ActionOutcome{ActionState::Done, detail};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<ReleaseAction>());

}  // namespace llmwatch
