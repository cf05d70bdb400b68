#pragma once
// The one interface every action implements (cancel, restart, kill/save switch, hold, alert).
// Actions never decide: the policy chose them, the executor journaled the intent and
// checked dry-run and rate limits; an action only does its one thing and says how it went.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/action_catalogue.h"
#include "config/config.h"
#include "rules/finding.h"
#include "slurm/slurm_client.h"
#include "slurm/slurm_job.h"
#include "util/time_budget.h"

namespace llmwatch {

class Store;
struct JobProgress;

struct ActionRequest {
  std::string action;            // registry name: "cancel", "restart", ...
  std::string job;               // the watched job's name (the subject)
  std::optional<SlurmJob> task;  // the Slurm job or array task acted on
  std::vector<SlurmJob> queue;   // everything queued for this watched job (pending remainder)
  // How old the answer `queue` came from is: > 0 on a wake, which replays its tick's squeue.
  double queue_age_s = 0;
  const JobSettings* settings = nullptr;
  // The job's progress as this cycle's checks left it; the store holds the last cycle's until
  // the record phase, after the actions (a crash line made one no rank goes on from this cycle
  // already shortens the dump's confirmation gap). Null: read the store.
  const JobProgress* progress = nullptr;
  Finding finding;                   // why
  std::vector<std::string> exclude;  // nodes a resubmitted run must avoid
  std::vector<std::string> done;     // what other actions did for this finding this cycle
  // An earlier action of the plan found the finding wrong (ActionOutcome::disproves): only
  // alerts still run, and they say so at info, paging no one.
  bool disproved = false;
  // A restart may be queued behind `task` while it dies (rules/queued_restart.h): its crash
  // names its nodes and cannot end a crash loop, so nothing its end shows would change the
  // restart.
  bool queue_behind = false;
  // The plan starts the run again after its cancel: where an array's next task starts by itself
  // once the cancelled one leaves, the cancel first keeps it off `exclude` (Slurm starts it
  // within a second of the cancel, before a restart could).
  bool restarts_after_cancel = false;
  double episode = 0;  // when the finding started firing (alerts: one per episode)
  // Storage actions: the [[storage]] entry and the one file or directory acted on.
  const StorageSettings* storage = nullptr;
  std::string path;
  bool dry_run = false;  // [llmwatch] dry_run: the executor says what it would do
  double now = 0;        // the cycle that asked (an action that may repeat keys on it)
};

struct ActionContext {
  const Config& config;
  SlurmClient& slurm;
  Store& store;
  double now;
  // The cycle's time for work on other machines (a stack dump by srun); unlimited when none.
  const TimeBudget* remote = nullptr;
  std::optional<Seconds> grant(Seconds want) const {
    return remote ? remote->grant(want) : std::optional<Seconds>(want);
  }
};

// How an action ended, as the journal records it ("done", "failed", "skipped", "dry-run",
// "waiting"). A skipped action did not run (nothing to do, over budget, not llmwatch's to
// touch); a dry-run one says what it would have done; a waiting one cannot run yet (a restart
// while an earlier task of the run is alive) and is asked again next cycle. A failed one is
// retried after a backoff (Store::begin_action).
enum class ActionState { Done, Failed, Skipped, DryRun, Waiting };
const char* action_state_name(ActionState s);

struct ActionOutcome {
  ActionState state = ActionState::Failed;
  std::string detail;  // one line for the journal, status and alerts
  // The action found the finding wrong (dump: the stacks moved, the run is not hung): the rest
  // of the plan runs only its alerts, which say so.
  bool disproves = false;
  // The action could not run in what is left of this cycle (its remote budget): the rest of
  // the plan waits for the next cycle too, where this action runs again.
  bool defers = false;
  // Waiting for this task to end (a restart behind a dying task): the daemon asks Slurm about
  // it alone, often, rather than waiting for its next poll of the whole queue.
  std::string awaits{};
  // A wait that follows something done this time (a dump taken and kept as the first): told
  // even when the action was waiting before, where a wait that only goes on is told once.
  bool done_meanwhile = false;
};

// The cluster-wide hourly limit ([limits]) an action counts against. Actions with the same
// budget share it: a reboot takes a node out as a drain does, so both count as drains.
enum class HourlyBudget { None, Restarts, Drains, Cancels };

// The task an action is about, as every key names it: "7@1799999000" (Slurm requeues a task
// under the same id, and a requeued task that hangs again is another task to act on), or the
// job when no task is known.
std::string task_identity(const ActionRequest& r);
std::string task_identity(const std::string& display_id, std::int64_t start);
// The journal key of a task's restart (restart's own): what a withdrawn queued restart, which
// started no run, is found by (Store::withdraw_action).
std::string restart_key(const std::string& display_id, std::int64_t start);

class ActionPlugin {
 public:
  virtual ~ActionPlugin() = default;
  virtual std::string name() const = 0;
  // Its entry in the catalogue (config/action_catalogue.h): what it acts on, one line of
  // help, and whether people may ask for it as `llmwatch NAME JOB`.
  virtual ActionTarget target() const { return ActionTarget::Job; }
  virtual std::string help() const = 0;
  virtual bool manual() const { return false; }
  virtual HourlyBudget budget() const { return HourlyBudget::None; }
  // The same key never runs twice (the journal enforces it): e.g. "cancel:3_1".
  virtual std::string idem_key(const ActionRequest& r) const;
  virtual ActionOutcome execute(const ActionRequest& r, ActionContext& ctx) = 0;
  // True when the action's whole effect is rows in the store (it touches nothing outside):
  // the executor then journals and runs it in one transaction.
  virtual bool store_only() const { return false; }
  // What Slurm does in its place when a budget stops it ("" when nothing does): a restart
  // refused by max_restarts still happens when the run is an array whose next task starts by
  // itself, and "needs a human" alone would say the run stopped. It may make that safer (the
  // restart keeps such a task off bad nodes), never in a dry run.
  virtual std::string happens_anyway(const ActionRequest&, ActionContext&) { return ""; }
};

}  // namespace llmwatch
