#include "cycle/executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "alert/alert_message.h"
#include "alert/notifier.h"
#include "config/staged_action.h"
#include "registry.h"
#include "util/paths.h"

namespace llmwatch {

Status Executor::within_budget(const std::string& action, const ActionRequest& r) {
  const double hour_ago = now_ - 3600;
  const ActionPlugin* plugin = find_action(action);
  const HourlyBudget budget = plugin ? plugin->budget() : HourlyBudget::None;
  if (budget == HourlyBudget::None) return {};
  // Every action on this budget counts, whatever its name.
  int used = 0;
  for (const auto& name : action_names())
    if (find_action(name)->budget() == budget) used += store_.count_actions(name, "", hour_ago);
  const Limits& l = config_.limits;
  auto [limit, key] =
      budget == HourlyBudget::Restarts ? std::pair{l.max_restarts_per_hour, "max_restarts_per_hour"}
      : budget == HourlyBudget::Drains ? std::pair{l.max_drains_per_hour, "max_drains_per_hour"}
                                       : std::pair{l.max_cancels_per_hour, "max_cancels_per_hour"};
  if (used >= limit) return Error{std::string(key) + " (" + std::to_string(limit) + ") reached"};
  // A job's own restart budget, within its restart_window.
  if (budget == HourlyBudget::Restarts && r.settings) {
    double window_start = now_ - static_cast<double>(r.settings->restart_window.count());
    if (store_.count_actions(action, r.job, window_start) >= r.settings->max_restarts)
      return Error{"max_restarts (" + std::to_string(r.settings->max_restarts) + " per " +
                   format_duration(r.settings->restart_window) + ") reached for " + r.job};
  }
  return {};
}

std::optional<Executor::Ran> Executor::run_journaled(ActionPlugin& plugin, const ActionRequest& req,
                                                     const std::string& key,
                                                     const std::string& reason,
                                                     const Status& budget) {
  const std::string& name = req.action;
  auto started = store_.start_action(key, name, req.job, reason, now_);
  if (!started) return std::nullopt;
  const std::int64_t id = started->id;
  const int attempts = started->attempts;
  ActionOutcome outcome;
  ActionContext ctx{config_, slurm_, store_, now_, remote_};
  if (!budget) {
    const std::string anyway = plugin.happens_anyway(req, ctx);
    outcome = {ActionState::Skipped, "not done: " + budget.error() + "; needs a human" +
                                         (anyway.empty() ? ""
                                                         : ", but " + anyway + " (llmwatch hold " +
                                                               req.job + " stops it)")};
  } else if (config_.dry_run && name != "alert") {
    outcome = {ActionState::DryRun,
               "would " + name + (req.task ? " " + req.task->display_id() : " " + req.job)};
  } else {
    try {
      outcome = plugin.execute(req, ctx);
    } catch (const std::exception& e) {
      if (plugin.store_only()) throw;  // rolls back with its journal entry; retried next cycle
      outcome = {ActionState::Failed, e.what()};
    }
  }
  const std::string state = action_state_name(outcome.state);
  store_.finish_action(id, state, outcome.detail, now_);
  if (outcome.state == ActionState::Waiting) {
    ++waiting_;
    if (!outcome.awaits.empty() &&
        std::find(awaited_.begin(), awaited_.end(), outcome.awaits) == awaited_.end())
      awaited_.push_back(outcome.awaits);
  }
  // A dry run or a wait is journaled again each time (it takes no key) but told once, and
  // counts as nothing done: not every cycle it goes on. A wait after something done meanwhile
  // is told again: what was done (the stacks moved since the look's dump, this one kept) would
  // otherwise be only in the actions table.
  if ((outcome.state == ActionState::Waiting || outcome.state == ActionState::DryRun) &&
      started->retaken_from == state && !outcome.done_meanwhile)
    return Ran{outcome, false};
  bool not_done = outcome.state == ActionState::Failed || outcome.state == ActionState::Skipped;
  store_.add_event(now_, "action", req.job, not_done ? "warning" : "info",
                   name + " " + state + ": " + outcome.detail +
                       (attempts > 1 ? " (attempt " + std::to_string(attempts) + ")" : ""));
  // The last retry failed: what it was for is left undone (a crashed run left down) and a
  // person must know at once, whatever the finding's own severity.
  if (outcome.state == ActionState::Failed && attempts >= Store::kMaxAttempts && name != "alert") {
    std::string text = name + " failed " + std::to_string(attempts) + " times for " + req.job +
                       ", no more retries: " + outcome.detail;
    store_.add_event(now_, "action", req.job, "critical", text);
    FindingRow row{req.finding.key + "/" + name + "-failed",
                   "critical",
                   text,
                   "[]",
                   "firing",
                   now_,
                   now_,
                   0,
                   0,
                   ""};
    queue_alert(config_, store_, message_for(row, "firing", text, now_), now_);
  }
  return Ran{outcome, true};
}

int Executor::run_plan(const ActionRequest& base, const std::vector<std::string>& plan) {
  int count = 0;
  std::vector<std::string> done;
  bool disproved = false;
  for (const auto& step : plan) {
    auto staged = parse_staged_action(step);
    if (!staged) continue;  // config check rejected it already
    const std::string& name = staged->action;
    // Nothing acts on a finding an earlier action disproved; the alert tells what happened.
    if (disproved && name != "alert") {
      spdlog::info("{}: not running {}: {}", base.finding.key, name, done.back());
      continue;
    }
    // A later escalation step waits until its finding has fired long enough; it is not
    // journaled before, so it runs in the first cycle past its delay.
    if (now_ - base.episode < static_cast<double>(staged->delay.count())) continue;
    // Fenced before journaling: a deposed supervisor leaves no intent behind for the holder.
    if (fence_ && !fence_().empty()) {
      spdlog::error("{}: not running {}: {}", base.finding.key, name, fence_());
      break;
    }
    ActionPlugin* plugin = find_action(name);
    if (!plugin) {
      spdlog::error("{}: unknown action '{}'", base.finding.key, name);
      continue;
    }
    ActionRequest req = base;
    req.action = name;
    req.done = done;
    req.disproved = disproved;
    req.dry_run = config_.dry_run;
    req.now = now_;
    std::string key = plugin->idem_key(req);
    std::string reason = base.finding.key + ": " + base.finding.summary;
    // The budget is read before this action is journaled, so it does not count itself.
    Status budget = within_budget(name, req);
    std::optional<Ran> ran;
    auto journal_and_run = [&] { ran = run_journaled(*plugin, req, key, reason, budget); };
    // An action whose whole effect is rows in the store (an alert: journal + outbox) is
    // recorded in one transaction with its journal entry: a crash or a full disk leaves
    // both or neither, so it is never journaled as begun yet never queued.
    if (plugin->store_only())
      store_.transaction(journal_and_run);
    else
      journal_and_run();
    if (!ran) continue;  // journaled before: idempotent, never twice
    const ActionOutcome& outcome = ran->outcome;
    if (ran->told) {
      ++count;
      const std::string state = action_state_name(outcome.state);
      spdlog::info("action {} for {}: {} ({})", name, base.finding.key, state, outcome.detail);
      if (name != "alert") done.push_back(name + ": " + state + " — " + outcome.detail);
      disproved |= outcome.disproves;
    }
    if (outcome.defers) break;  // the rest of the plan runs next cycle, after this action
  }
  if (disproved) disproved_.push_back(base.finding.key);
  return count;
}

void Executor::notify_resolved(const FindingRow& row) {
  if (row.severity == "info" || row.severity == "unknown") return;
  if (row.notified_at <= 0)
    return;  // never announced (silenced, or below every channel): nothing to resolve
  std::string summary = "resolved after " +
                        format_duration(Seconds(static_cast<long long>(now_ - row.first_seen))) +
                        " (was: " + row.summary + ")";
  queue_alert(config_, store_, message_for(row, "resolved", summary, now_), now_);
}

}  // namespace llmwatch
