// alert: tell people. The message goes to every [[alert.*]] channel; the event history
// always gets it too, so an alert is never lost even when every channel is down.
#include "action.h"
#include "alert/alert_message.h"
#include "store/store.h"
#include "util/paths.h"

namespace llmwatch {
namespace {

class AlertAction : public ActionPlugin {
 public:
  std::string name() const override { return "alert"; }
  std::string idem_key(const ActionRequest& r) const override {
    // One alert per firing episode of a finding: the episode starts at first_seen.
    return "alert:" + r.finding.key + "@" + std::to_string(static_cast<long long>(r.episode));
  }
  ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) override {
    AlertMessage m;
    m.key = r.finding.key;
    m.state = "firing";
    m.severity = severity_name(r.finding.severity);
    m.subject = r.finding.subject;
    m.summary = r.finding.summary;
    m.evidence = r.finding.evidence;
    m.actions = r.done;
    m.ts = ctx.now;
    m.host = hostname();
    auto deliveries = deliver(ctx.config, m);
    int failed = 0;
    std::string detail;
    for (const auto& d : deliveries) {
      if (!d.ok) ++failed;
      detail += (detail.empty() ? "" : "; ") + d.channel + (d.ok ? " ok" : ": " + d.error);
    }
    if (deliveries.empty()) detail = "recorded (no alert channels configured)";
    return {failed ? "failed" : "done", detail};
  }
};

}  // namespace

std::unique_ptr<ActionPlugin> make_alert_action() { return std::make_unique<AlertAction>(); }

}  // namespace llmwatch
