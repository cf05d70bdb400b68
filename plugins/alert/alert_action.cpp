// alert: tell people. The message is journaled for every [[alert.*]] channel that takes it
// (severity, match, silences) and sent at the end of the cycle, retried until delivered;
// the event history always has it too.
#include "action.h"
#include "alert/alert_message.h"
#include "alert/notifier.h"
#include "registry.h"
#include "store/store.h"
#include "util/paths.h"

namespace llmwatch {
namespace {

class AlertAction : public ActionPlugin {
 public:
  std::string name() const override { return "alert"; }
  std::string help() const override {
    return "tell people: queue the finding for every channel that takes it";
  }
  std::string idem_key(const ActionRequest& r) const override {
    // One alert per firing episode of a finding: the episode starts at first_seen.
    return "alert:" + r.finding.key + "@" + std::to_string(static_cast<long long>(r.episode));
  }
  // Queued into the outbox here, delivered at the end of the cycle: only store rows.
  bool store_only() const override { return true; }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    AlertMessage m;
    m.key = r.finding.key;
    m.state = "firing";
    m.severity = severity_name(r.finding.severity);
    m.subject = r.finding.subject;
    m.summary = r.finding.summary;
    // A finding an earlier action disproved (a dump that saw the stacks move: a near miss) is
    // news, not a page: told at info, and not marked told, so no "resolved" follows it and a
    // later real episode is told at its own severity. It was told as the hang, then resolved.
    if (r.disproved) {
      m.notice = true;
      m.severity = "info";
      m.summary = "disproved, nothing done: " + r.finding.summary;
    }
    m.evidence = r.finding.evidence;
    m.actions = r.done;
    m.ts = ctx.now;
    m.host = hostname();
    if (!r.disproved) ctx.store.set_notified(r.finding.key, ctx.now, m.severity);
    auto queued = queue_alert(ctx.config, ctx.store, m, ctx.now);
    if (!queued.silenced_by.empty())
      return {ActionState::Skipped, "muted by " + queued.silenced_by};
    if (queued.channels.empty()) return {ActionState::Done, "recorded (no alert channel takes it)"};
    std::string detail = "queued for";
    for (const auto& c : queued.channels) detail += " " + c;
    return {ActionState::Done, detail};
  }
};

}  // namespace

LLMWATCH_REGISTER_ACTION(std::make_unique<AlertAction>());

}  // namespace llmwatch
