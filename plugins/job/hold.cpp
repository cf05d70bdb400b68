// hold: `scontrol hold` the watched job's pending tasks so a crash loop stops burning
// allocations; a human releases it (`llmwatch release JOB` or `scontrol release`).
#include "action.h"
#include "registry.h"

namespace llmwatch {
namespace {

class HoldAction : public ActionPlugin {
 public:
  std::string name() const override { return "hold"; }
  std::string help() const override { return "hold the job's pending tasks"; }
  bool manual() const override { return true; }
  // Once an episode of its finding: a loop held, released by a person, and come back is held
  // again (the key was the finding's alone, done for ever after the first).
  std::string idem_key(const ActionRequest& r) const override {
    return "hold:" + r.job + ":" + r.finding.key + "@" +
           std::to_string(static_cast<long long>(r.episode));
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    std::vector<std::string> held;
    for (const auto& q : r.queue) {
      if (!q.pending()) continue;
      std::string id = q.control_id();
      if (auto done = ctx.slurm.control("hold", id); !done)
        return {ActionState::Failed, done.error()};
      held.push_back(id);
    }
    if (held.empty()) return {ActionState::Skipped, "nothing pending to hold"};
    std::string detail = "held";
    for (const auto& id : held) detail += " " + id;
    return {ActionState::Done, detail};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<HoldAction>());

}  // namespace llmwatch
