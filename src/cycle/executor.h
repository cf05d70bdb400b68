#pragma once
// Runs what the policy chose, safely: every action is journaled before it runs (intent)
// and after (outcome); an idempotency key that was journaled once never runs again; dry-run
// records "would do" and does nothing; per-hour and per-job budgets are enforced here.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "action.h"
#include "config/config.h"
#include "store/store.h"
#include "util/result.h"

namespace llmwatch {

class Executor {
 public:
  Executor(const Config& config, Store& store, SlurmClient& slurm, double now)
      : config_(config), store_(store), slurm_(slurm), now_(now) {}
  // Asked before each action (supervisor.h): once it refuses, run_plan journals nothing
  // more and runs nothing more.
  void set_fence(std::function<const std::string&()> fence) { fence_ = std::move(fence); }
  // The cycle's budget for work on other machines, which actions that wait on them share.
  void set_remote_budget(const TimeBudget* budget) { remote_ = budget; }

  // Runs `plan` (action names, in order) for one finding; returns how many ran or were recorded.
  int run_plan(const ActionRequest& base, const std::vector<std::string>& plan);
  // How many actions this executor ran said they wait (ActionState::Waiting).
  int waiting() const { return waiting_; }
  // The running tasks whose end those waits are for (ActionOutcome::awaits).
  const std::vector<std::string>& awaited() const { return awaited_; }
  // The findings an action disproved (ActionOutcome::disproves): resolved at once.
  const std::vector<std::string>& disproved() const { return disproved_; }
  // A finding cleared: tell the channels once.
  void notify_resolved(const FindingRow& row);

  // Fails, saying which budget is spent, when `action` may not run now.
  Status within_budget(const std::string& action, const ActionRequest& r);

 private:
  // What became of one action: its outcome, and whether it was told (a dry run or a wait
  // that goes on is journaled again but told once, and counts as nothing done).
  struct Ran {
    ActionOutcome outcome;
    bool told = true;
  };
  // Journals the intent, runs (or skips, or dry-runs) the action, journals the outcome and
  // its event; nullopt when the key was journaled before.
  std::optional<Ran> run_journaled(ActionPlugin& plugin, const ActionRequest& req,
                                   const std::string& key, const std::string& reason,
                                   const Status& budget);

  const Config& config_;
  Store& store_;
  SlurmClient& slurm_;
  double now_;
  std::function<const std::string&()> fence_;
  const TimeBudget* remote_ = nullptr;
  int waiting_ = 0;
  std::vector<std::string> awaited_;
  std::vector<std::string> disproved_;
};

}  // namespace llmwatch
