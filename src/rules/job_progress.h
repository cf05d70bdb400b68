#pragma once
// What llmwatch remembers about one watched job between cycles, and the hang rule:
// a job is hung when its step counter has not moved for longer than its allowance.
// The allowance adapts to the job (k × the longest step interval seen after warm-up,
// clamped to [floor, ceiling]) and widens for startup and checkpoint saves.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "probes/log_tail.h"
#include "probes/training_log.h"

namespace llmwatch {

struct JobProgress {
  std::string task;  // the Slurm job id (e.g. "3_1") this progress belongs to
  // The task's start time: a requeued job keeps its id (scontrol requeue, preemption), so
  // the id alone cannot tell a new run from the old one.
  std::int64_t task_start = 0;
  std::string log_path;                      // the log(s) followed, for status and evidence
  std::map<std::string, LogCursor> cursors;  // one per file (per-rank logs: several)
  double task_seen = 0;              // when this task was first seen running (or its start_time)
  std::optional<std::int64_t> step;  // the highest step seen in this task
  std::int64_t best_step = -1;       // the highest step over all tasks (for "resumed past")
  std::optional<std::int64_t> max_steps;
  double last_progress = 0;  // when the step last advanced (the log's write time when known)
  // The longest time the run took per step, or kept its log silent while healthy, after
  // warm-up: what the hang allowance is a multiple of.
  double longest_interval = 0;
  // What longest_interval is made of where stale_memory is set: the longest interval learned in
  // each stretch of stale_memory / kIntervalStretches, oldest first, as (when the stretch began,
  // its longest). longest_interval is the largest of those kept, and a stretch older than
  // stale_memory is dropped once a newer interval is learned (never while the run is silent).
  static constexpr std::size_t kIntervalStretches = 6;
  static constexpr std::size_t kMaxIntervalPeaks = kIntervalStretches + 1;  // the newest, partial
  std::vector<std::pair<double, double>> interval_peaks;
  // When this task's logs were last read; and that time again when the read found no new
  // progress: the log was seen silent from last_progress until then, a lower bound of a real
  // silence (#30: a logger that flushes every 30 s is silent for 30 s between steps).
  double last_read = 0;
  double silent_until = 0;
  // A near miss (stacks seen moving) restarted the hang clock in a silence that began here, at
  // the step before it (0: none): when the run steps again, the silence it was seen alive
  // through is a healthy interval, learned as one (it was never learned, being longer than the
  // allowance, so every return of that silence was a hang finding and two more dumps).
  double seen_alive_from = 0;
  // The time a step takes as observed between reads (not as printed), smoothed: the ETA's
  // rate (#27: a printed 1000 ms against a real 2 s between step lines). 0: none yet.
  double observed_interval = 0;
  int advances = 0;  // step advances seen in this task
  std::optional<double> step_time, loss;
  double checkpoint_since = 0;  // a save is in progress since (0: none)
  double checkpoint_done = 0;   // when the last save finished: the step clock restarts
  double checkpoint_began = 0;  // when the last save began, kept after it ends (goodput)
  double evaluation_since = 0;  // an evaluation pass prints since (0: none); a step ends it
  // The launcher restarts its worker group in the job since (LogLine::workers_restart; 0: none):
  // the run loads again before its next step, as at its start. A step ends it.
  double restart_since = 0;
  std::string crash;       // crash signature seen in this task
  int crash_advances = 0;  // `advances` when it was seen: more since, it trains on
  double crash_seen = 0;   // when the read that saw it ran
  // When its line was written, as near as the log tells (that read's mtime, at or after the
  // line): what the 8 s after a line no process goes on from count from. 0: not known.
  double crash_written = 0;
  bool crash_sticky = false;  // its process cannot go on (LogLine::crash_sticky)
  // Who printed it (LogLine::crash_rank, crash_by_task), and the look for that rank's process
  // after a fatal line a rank may go on from (#30, rules/rank_exit.h): when it ran (0: not yet)
  // and whether it saw the process gone, which made the line one no rank goes on from.
  int crash_rank = -1;
  bool crash_by_task = false;
  double crash_rank_looked = 0;
  bool crash_rank_ended = false;
  // When a read found slurmstepd's line that Slurm is ending this task (LogLine::slurm_ends_task;
  // 0: none): what its processes print after it (torchrun's SIGTERM traceback) is the end's.
  double slurm_ending_read = 0;
  std::vector<std::string> recent;  // the last lines, as evidence
  std::uint64_t bytes_read = 0;     // total, for the bytes-per-cycle measurement
  double series_at = 0;             // when the progress series last got a row (store/)
  // Tasks in a row that ended before making any progress (a crash loop), and the last
  // task counted so that one death is never counted twice.
  int quick_deaths = 0;
  std::string counted_task;
  // Tasks in a row that ended at the same last step, none passing it (a step loop: a hang or
  // crash at a bad sample or a code path, which every restart meets again on other nodes),
  // that step, and those tasks' ids for the finding ("8, 9, 10").
  int step_ends = 0;
  std::optional<std::int64_t> end_step;
  std::string end_step_tasks;
  // The same tasks' episodes (task_episode), the last kLoopEpisodes: what their crashes charged
  // to nodes is withdrawn from the suspicion ledger once the loop is said (the step, not the
  // nodes, stopped them).
  static constexpr std::size_t kLoopEpisodes = 8;
  std::vector<std::string> end_step_episodes;

  // Training health, for the training detectors and views.
  std::vector<double> step_times;  // recent printed step times, saves excluded
  std::vector<double> losses;      // recent finite losses
  std::optional<double> consumed_samples, global_batch_size;
  int samples_stalled = 0;  // step advances in a row without consumed samples moving
  bool nan_loss = false;    // a NaN/inf loss in this task
  std::optional<std::int64_t> skipped_iterations, nan_iterations;
  bool counters_rising = false;  // skipped/NaN iteration counters went up in the last batch
  std::optional<double> save_seconds, load_seconds;
  double checkpoint_interval = 0;  // between the last two completed saves
  bool after_checkpoint = false;   // the next step includes a save: not a baseline sample

  // A crash signature was printed and the step advanced after it: a handled error (a wandb
  // or HTTP retry), not a dying task.
  bool trained_past_crash() const { return !crash.empty() && advances > crash_advances; }
  // Slurm said it is ending this task, kSlurmEndingHolds ago at most: the task is judged by its
  // end, as one Slurm shows COMPLETING is, though a snapshot taken before still shows it running
  // (a cycle a crash line wakes). A task still running long after the line was not ended by it
  // (a cancel slurmctld did not keep; a line a user printed) and is judged as any other.
  static constexpr double kSlurmEndingHolds = 120;
  bool slurm_ending(double now) const {
    return slurm_ending_read > 0 && now - slurm_ending_read < kSlurmEndingHolds;
  }

  std::string to_json() const;  // every field
  // The same split in two for the store: the hot part changes every cycle and is small
  // (cursors, step, clocks); the cold part is most of the bytes (the step-time and loss
  // baselines, the evidence lines) and may be written less often.
  std::string hot_json() const;
  std::string cold_json() const;
  // The cold parts (cold_json's fields) hold the same values.
  bool same_cold(const JobProgress& o) const {
    return recent == o.recent && step_times == o.step_times && losses == o.losses;
  }
  static JobProgress from_json(const std::string& text);  // a whole or a hot document
  static void read_cold(JobProgress& p, const std::string& cold);

 private:
  std::string write(bool hot, bool cold) const;
};

// apply_lines over lines handed on in batches (a log read through a small buffer): the
// lines of one read are fed in order, then finish() does what is done once per read (the
// step interval over all of it) and returns the step advances seen.
class ProgressUpdate {
 public:
  // `allowance`: the hang allowance in force before these lines (0: none known). A gap
  // longer than it was a hang (its finding fired), never a step interval to learn (#27: a hang
  // that cleared by itself raised the allowance from 12s to 1m27s).
  // `memory`: how long a learned step interval counts (JobSettings::stale_memory; 0: for the
  // whole task).
  ProgressUpdate(JobProgress& p, const TrainingLogParser& parser, double now, double allowance = 0,
                 double memory = 0);
  // Returns the index of the last line that set one of the read's clocks (a step, a save's
  // start or end, an evaluation pass), if one did.
  std::optional<size_t> feed(std::span<const std::string_view> lines);
  // `written`: when the lines were written (written_time), if known and earlier than `now`.
  // `clocks_written`: when that last clocking line was, if known and earlier (log_growth.h:
  // lines after it in the same read, such as a hung rank's heartbeats, moved the mtime on).
  std::vector<std::pair<std::int64_t, double>> finish(double written = 0,
                                                      double clocks_written = 0);

 private:
  JobProgress& p_;
  const TrainingLogParser& parser_;
  double now_;
  std::optional<std::int64_t> step_before_;
  double progress_before_;
  double allowance_;
  double memory_;
  bool counters_rose_ = false;
  // The clocks these lines set: they move to the write time in finish().
  static constexpr unsigned kProgress = 1, kCheckpointSince = 2, kCheckpointDone = 4,
                            kEvaluationSince = 8, kCheckpointInterval = 16, kCheckpointBegan = 32,
                            kCrashWritten = 64, kRestartSince = 128;
  unsigned set_ = 0;
  // A save or an evaluation pass that outlasted a read fell between the steps: its time is no
  // step interval (it has its own grace; #30: one 15-minute save made the allowance 75
  // minutes). One that began and ended within a read is part of the read's time per step,
  // which is bounded by the interval: the fake trainer's saves every 5 steps left a 30 s read
  // of three 10 s steps never learned.
  bool phase_under_way_;  // at the read's start
  bool phase_ = false;    // and a step came after it
  std::vector<std::pair<std::int64_t, double>> advances_;
};

// Learns one step interval (or silence) `sample`, seen at `at`: longest_interval becomes the
// longest learned within the last `memory` seconds (0: ever, in this task).
void learn_interval(JobProgress& p, double sample, double at, double memory);

// When the lines of one read were written: the file's mtime taken after the read (#30: the
// time of the read is up to one interval late, and a hang was found ~80 s after the last step
// with a 60 s allowance). Only an mtime that can be true is taken: not before the previous
// read, when those bytes were not there yet, and not after now (a file server's clock ahead or
// behind); else `now`, as before. The mtime is the last write, never earlier than a line.
double written_time(double mtime, double last_read, double now);

// A near miss: the run was seen moving at `at` in a silence; its hang clock restarts there.
void seen_alive(JobProgress& p, double at);

// After all of a task's logs were read at `now`: remembers the read, and whether the log was
// silent since the progress before it (`progress_before`).
void finish_read(JobProgress& p, double progress_before, double now);

// Folds new log lines into the progress; `now` is the time they were read, `written` when
// they were written (ProgressUpdate::finish). Returns the step advances seen, for the progress
// series.
std::vector<std::pair<std::int64_t, double>> apply_lines(JobProgress& p,
                                                         std::span<const std::string_view> lines,
                                                         const TrainingLogParser& parser,
                                                         double now, double written = 0);
std::vector<std::pair<std::int64_t, double>> apply_lines(JobProgress& p,
                                                         const std::vector<std::string>& lines,
                                                         const TrainingLogParser& parser,
                                                         double now, double written = 0);

// Starts tracking a new task (a new array task or a resubmitted job): keeps best_step, and
// the cursors only if the log files are the same (an array appending to one shared log).
void start_task(JobProgress& p, const std::string& task, const std::string& log_path,
                double started, std::int64_t task_start = 0);
// Whether a running Slurm task is another run than the one this progress follows: another
// id, or the same id started again (a requeue).
bool is_new_task(const JobProgress& p, const std::string& task, std::int64_t task_start);
// Shifts every remembered time by `seconds`: the wall clock jumped, or llmwatch was not
// watching, and that time must not count as the job's idle time.
void shift_times(JobProgress& p, double seconds);

struct StaleVerdict {
  bool hung = false;
  double idle = 0;       // seconds since progress (or since start)
  double allowance = 0;  // what was allowed in the current phase
  std::string phase;     // startup | training | checkpoint
  // How the allowance was made, for the finding and status alike: "5 x 5s longest step
  // interval, within floor 10s" (#27: it moved and said nothing).
  std::string how;
};

// A task's identity as a finding's episode and an incident's task: Slurm requeues a task under
// the same id, so the id alone does not tell one start from the next.
std::string task_episode(const std::string& task, std::int64_t start);

// The current task has ended (replaced by another, or gone from the queue): counts it as a
// quick death if it never made progress. A task that failed after progress (a cancel by
// llmwatch: a hang; else Slurm's verdict where a post-mortem made one, `failed_by_verdict`:
// an OOM kill or a FAILED exit prints nothing, and a completed run may print a traceback as it
// shuts down; else a crash signature it did not train past) is one more end of a step loop if
// the failed task before it stopped at the same step; any other end breaks the loop (an array
// of sweep runs completes at the same max step every time). Idempotent per task.
void task_ended(JobProgress& p, bool cancelled_by_llmwatch,
                std::optional<bool> failed_by_verdict = std::nullopt);

// A crash signature that no rank survives (an NCCL or CUDA error, NCCL's watchdog timeout),
// unlike an out-of-memory error or a traceback, which a trainer may catch and step on.
bool fatal_crash_signature(std::string_view crash);
// A crash signature a node may be at fault for (a GPU's, NCCL's or the network's error, an Xid):
// not an out-of-memory error or a plain traceback, which blame the code or the data.
bool may_be_node_fault(std::string_view crash);
// Such a line was printed, no step came after it and nothing showed life since (a near miss
// restarts last_progress past it): the rank that printed it is gone and its peers wait in a
// collective it left.
bool waits_after_fatal_crash(const JobProgress& p);
// Then the hang allowance is 2 x the longest step interval, at least this (after a line its
// process cannot go on from, which no rank steps past: this, counted from the line's write): a
// task that ends by itself (a torchrun teardown, srun --kill-on-bad-exit) is gone within a few
// seconds, and one that lingers past it holds up the crash's restart (#30: crash -> new run RUNNING
// <= 15 s; at 15 s the lingering task alone set it).
inline constexpr double kAfterFatalCrashFloor = 8;
// The gap between a hang's two dumps (confirm_hang): while the run waits after a fatal line, one
// step interval (none after a line its process cannot go on from), at least this, never more than
// confirm_hang. A rank that caught the error and goes on runs Python between them; the peers
// waiting in the collective do not move for as long as NCCL's own timeout, however long the gap. 0
// (confirm_hang off) stays 0.
inline constexpr double kAfterFatalCrashConfirmFloor = 4;
double confirm_gap(const JobProgress& p, const JobSettings& job);
// When such a line was written, as near as the log tells (its read where the log cannot say).
double fatal_line_at(const JobProgress& p);
// When the look for the rank that printed a fatal line is due (#30, rules/rank_exit.h): a line
// a rank may go on from (an NCCL error raised to Python, which a trainer may catch), with no
// step and no sign of life since, whose run waits two step intervals for it that are longer
// than the kAfterFatalCrashFloor a line no rank goes on from gets. Due kRankFirstLook after the
// line's write, so that a rank already gone or exiting by then (a traceback to the top goes
// straight into the interpreter's exit) has made the line one no rank goes on from before its
// kAfterFatalCrashFloor runs out, and the hang is dumped then, the look off its path; once more
// at kAfterFatalCrashFloor where the first saw it run (a teardown of some seconds), at least
// kRankLookGap after the first; then never for that crash. 0: no look.
inline constexpr double kRankFirstLook = 4;
inline constexpr double kRankLookGap = 2;
double rank_look_due(const JobProgress& p);

StaleVerdict evaluate_stale(const JobProgress& p, const JobSettings& job, double now);

}  // namespace llmwatch
