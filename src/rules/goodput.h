#pragma once
// Where a run's GPU-hours went (#29). Every look at a watched job charges the GPU-seconds
// since the previous look to exactly one bucket, or holds them as "open" until their fate is
// known: the time since the last step becomes productive (or rework, or slow) when the next
// step comes, and hang or idle end when the task ends instead. So the buckets are never
// negative and always sum exactly to what was accounted. Pure: the caller persists the state.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmwatch {

// The buckets, in the order views show them. "queue" (pending between runs of one training)
// counts against the training, not against the allocation.
inline constexpr const char* kGoodputBuckets[] = {
    "productive", "rework", "checkpoint", "startup", "hang", "slow", "idle end", "open", "queue"};

// GPU-seconds charged to a node for one task's end (its idle end, the steps the next run
// redid), on one UTC day: kept while the end may yet be a step loop's, so that the loop, once
// said, takes them back from the nodes its crashes named (the step, not the node, stopped the
// runs).
struct NodeCharge {
  std::string task;  // the ended task's episode ("12@1799999000")
  std::int64_t day = 0;
  std::string bucket, cause, node;
  double gpu_s = 0;
};

struct GoodputState {
  double at = 0;         // accounted up to (0: never)
  std::string task;      // the task being accounted ("" between runs)
  bool stepped = false;  // the task made its first step
  bool hung = false;     // a hang finding fired in this task
  double open_s = 0;     // GPU-seconds since the last step, fate not yet known
  // Steps up to this one were done before (the run resumed from an older checkpoint): doing
  // them again is rework, charged to the failure that made it (cause, node).
  std::int64_t redo_upto = -1;
  std::string redo_cause, redo_node;
  std::int64_t best = -1, last_step = -1;  // the run's best step; this task's last one
  double gpus = 0;                         // the accounted task's GPUs
  std::string last_cause, last_node;       // the last end's, for the next task's rework
  std::string last_task, redo_task;        // the tasks whose ends those are
  std::vector<NodeCharge> node_charges;    // ends that may yet be a loop's (unblame_loop)
  static constexpr std::size_t kNodeChargeEnds = 8;
  // Between two runs since this time (the last task's end): charged as queue when the next
  // look finds the training waiting or running again, dropped when it finds neither.
  double between_from = 0;

  std::string to_json() const;
  static GoodputState from_json(const std::string& text);  // {} or garbage: a fresh state
  // from_json(to_json()) gives this state back: its strings are valid UTF-8 (to_json makes
  // them so) and its numbers finite (to_json writes others as null).
  bool round_trips() const;
};

// One look at the job. The clocks (the last step's, a save's, the end's) split the time since
// the previous look where it really changed hands: a look every 30 s charged up to 30 s of a
// hang as productive, and a save that began and ended between two looks as training.
struct GoodputLook {
  double now = 0;
  double gpus = 1;         // GPUs of the running task (or requested, while pending)
  std::string task;        // the running task ("" none)
  double task_start = 0;   // its start (the allocation's), when known
  bool pending = false;    // no task runs, one waits in the queue
  bool advanced = false;   // the step moved since the last look
  double progress_at = 0;  // when the last step was written (0: unknown, taken as now)
  std::optional<std::int64_t> step;
  // The first of the steps since the last look, and when it was done: one read may hold
  // several steps, all with the read's clock; startup ends at the first (0: unknown).
  std::optional<std::int64_t> first_step;
  double first_step_at = 0;
  // The current or the last save: from `save_from` to `save_to` (0: still saving). Only the
  // part since the previous look is charged.
  double save_from = 0, save_to = 0;
  bool hang_firing = false;
  double slow_share = 0;  // a slowdown finding is open: this share of the time is lost
  // The last task ended since the previous look: its class (cause) and attributed node.
  std::optional<std::pair<std::string, std::string>> ended;
  double ended_at = 0;  // when Slurm ended its allocation (0: unknown, taken as now)
};

struct GoodputCharge {
  std::string bucket, cause, node;
  double gpu_s = 0;
  std::string end_task;  // charged to this task's end (its episode), where a node is named
};

std::vector<GoodputCharge> account_goodput(GoodputState& state, const GoodputLook& look);

// Keeps this look's charges to nodes (made on `day`) in the state, for the ends that may yet be
// called a loop: those of `streak` (the failed ends at one step so far,
// JobProgress::end_step_episodes) and the last end (not counted yet when it ended this look);
// at most kNodeChargeEnds ends'. So a run that trains on keeps none, and its state stays small
// (it is read every cycle). The ends of `loop` (a step loop's tasks, said now) are no node's:
// their charges in `charges` lose the node, and those kept from earlier looks are returned,
// for the ledger to move to no node. The cause and the bucket stay: the time was lost, and to
// that failure.
std::vector<NodeCharge> unblame_loop(GoodputState& state, std::vector<GoodputCharge>& charges,
                                     std::int64_t day, const std::vector<std::string>& loop,
                                     const std::vector<std::string>& streak);

}  // namespace llmwatch
