#pragma once
// What every action that takes a node out of service (drain, reboot) shares: once per firing
// episode, the drain budget, Slurm's current reason read first (a node someone else drained
// keeps their reason and is left alone), and a reason a human understands ("llmwatch: Xid 79
// GPU 3: GPU has fallen off the bus"). A subclass only says how it takes the node out.
#include <string>

#include "action.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/strings.h"
#include "util/text.h"

namespace llmwatch {

class TakeOutAction : public ActionPlugin {
 public:
  ActionTarget target() const override { return ActionTarget::Node; }
  HourlyBudget budget() const override { return HourlyBudget::Drains; }
  std::string idem_key(const ActionRequest& r) const override {
    return name() + ":" + r.job + ":" + r.finding.key + ":" +
           std::to_string(static_cast<long long>(r.episode));
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    auto show = ctx.slurm.show_node(r.job);
    if (show.empty()) return {ActionState::Failed, "scontrol show node " + r.job + " gave nothing"};
    const std::string reason = show["Reason"];
    if (reason_by(reason) == ReasonBy::Someone)
      return {ActionState::Skipped,
              r.job + " already has a reason set by someone else: " + sanitize_line(reason, 120)};
    // Never inside a character: Slurm keeps the reason as bytes, status shows it as text.
    std::string why = truncate_utf8(std::string(kOwnReasonPrefix) + " " + r.finding.summary, 200);
    auto out = take_out(r, ctx, why, reason_by(reason) == ReasonBy::Llmwatch);
    // Drained by llmwatch from now on: the undrain rule may return it once it passes.
    if (out.state == ActionState::Done)
      ctx.store.put(kv::drained(r.job), std::to_string(ctx.now), ctx.now);
    return out;
  }

 protected:
  // Takes node r.job out with reason `why`; `ours`: llmwatch's reason is already on it.
  virtual ActionOutcome take_out(const ActionRequest& r, ActionContext& ctx, const std::string& why,
                                 bool ours) = 0;
  // Drained by llmwatch from now on: the undrain rule returns it once a later check passes.
  static void mark_taken_out(const ActionRequest& r, ActionContext& ctx) {
    ctx.store.put(kv::drained(r.job), std::to_string(ctx.now), ctx.now);
  }
};

}  // namespace llmwatch
