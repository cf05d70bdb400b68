#include "policy/policy.h"

#include <algorithm>

#include "rules/end_cause.h"
#include "rules/job_rules.h"
#include "rules/launch_failure.h"

namespace llmwatch {

// Each class of end has its own default: a completed or cancelled run is left alone, a
// time limit continues the run (on_timeout), a cause nobody can name is only announced, and
// every crash follows on_crash (restart, within the crash-loop hold and the budgets).
static std::vector<std::string> actions_for_end(const Finding& f, const JobSettings& job) {
  if (f.cause == end_class_name(EndClass::Completed) ||
      f.cause == end_class_name(EndClass::Cancelled))
    return {};
  if (f.cause == end_class_name(EndClass::Timeout)) return job.on_timeout;
  if (f.cause == end_class_name(EndClass::Unknown)) return {"alert"};
  return job.on_crash;
}

// A hang where the runs before it stopped too (a step loop, rules/job_rules.h): on_hang's
// restarts give way to on_crash_loop's actions (the hold), placed before the cancel so that an
// array's next task is held before the cancel lets it start. A site whose on_hang restarts
// nothing has nothing to give way.
static std::vector<std::string> actions_for_step_loop_hang(const JobSettings& job) {
  std::vector<std::string> out;
  for (const auto& a : job.on_hang)
    if (a.rfind("restart", 0) != 0) out.push_back(a);
  if (out.size() == job.on_hang.size()) return out;
  auto at = std::find_if(out.begin(), out.end(),
                         [](const std::string& a) { return a.rfind("cancel", 0) == 0; });
  std::vector<std::string> loop;
  for (const auto& a : job.on_crash_loop)
    if (a.rfind("alert", 0) != 0 && std::find(out.begin(), out.end(), a) == out.end())
      loop.push_back(a);
  out.insert(at, loop.begin(), loop.end());
  return out;
}

std::vector<std::string> actions_for(const Finding& f, const JobSettings& job) {
  std::vector<std::string> out;
  if (f.kind == "hung")
    out = f.cause == kStepLoop ? actions_for_step_loop_hang(job) : job.on_hang;
  else if (f.kind == "absent")
    out = job.on_absent;
  else if (f.kind == "crashed")
    // A crash signature in a task that still trains is told, never acted on.
    out = f.severity == Severity::Critical ? job.on_crash : std::vector<std::string>{"alert"};
  else if (f.kind == "time-limit")
    out = job.on_time_limit;
  else if (f.kind == "ended")
    out = actions_for_end(f, job);
  else if (f.kind == "crash-loop")
    out = job.on_crash_loop;
  else if (f.kind == "launch-failed")
    // Released only where it then starts elsewhere (rules/launch_failure.h); else told.
    out = f.cause == kRelaunchable ? job.on_launch_failed : std::vector<std::string>{"alert"};
  else if (f.kind == "slowdown")
    out = job.on_slowdown;
  else if (f.kind == "loss-spike")
    out = job.on_loss_spike;
  else if (f.kind == "nan-loss" || f.kind == "bad-iterations")
    out = job.on_nan;
  else if (f.kind == "node-fault")
    out = job.on_node_fault;
  else if (f.kind == "node-degraded")
    out = job.on_node_degraded;
  else if (f.kind == "cancel-not-held")
    // Only a task llmwatch cancelled already: the decision was made and journaled, and the
    // cancel is issued again (rules/cancel_held.h) until its cause says a person must.
    out = f.cause.empty() ? std::vector<std::string>{"alert"} : std::vector<std::string>{"cancel"};
  else if (f.kind == "restart-unneeded")
    out = {"withdraw"};  // a restart llmwatch queued behind a task that went on
  else if (f.kind == "restart-keep-off")
    out = {"keep-off"};  // a restart llmwatch queued, off nodes named since
  else if (f.kind == "successor-missing" || f.kind == "successor-duplicate")
    out = {"successor"};  // llmwatch's own chain (plugins/self/successor.cpp)
  else if (f.severity != Severity::Info)
    out = {"alert"};
  // Every action is announced: a plan that acts without alerting gets an alert.
  bool acts = false, alerts = false;
  for (const auto& a : out) (a.rfind("alert", 0) == 0 ? alerts : acts) = true;
  if (acts && !alerts) out.push_back("alert");
  // Alerts go last so they can say what the other actions did.
  std::stable_partition(out.begin(), out.end(),
                        [](const std::string& a) { return a.rfind("alert", 0) != 0; });
  std::vector<std::string> allowed;
  for (const auto& a : out)
    if (action_allowed_on(f, a)) allowed.push_back(a);
  return allowed;
}

void suppress_restarts_in_crash_loop(const std::vector<Finding>& job_findings,
                                     std::vector<std::string>& plan) {
  for (const auto& f : job_findings)
    if (f.kind == "crash-loop") {
      // A relaunch too: it would release what the loop's hold holds.
      plan.erase(std::remove_if(plan.begin(), plan.end(),
                                [](const std::string& a) {
                                  return a.rfind("restart", 0) == 0 || a.rfind("relaunch", 0) == 0;
                                }),
                 plan.end());
      return;
    }
}

bool action_allowed_on(const Finding& f, const std::string& action) {
  return f.severity != Severity::Unknown || action.rfind("alert", 0) == 0;
}

}  // namespace llmwatch
