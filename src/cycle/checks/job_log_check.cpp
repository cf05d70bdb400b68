// Watched jobs: which queue entries are theirs, what their logs printed since the last look
// (step, loss, crash signatures), and the job rules (absent, stuck, hung, crashed, training
// health). Each job is its own failure domain: one job's bad log or a bug its input triggers
// makes that job `unknown`, and every other job is still watched.
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "cycle/check.h"
#include "cycle/checks/node_check_srun.h"
#include "cycle/checks/rank_exit_look.h"
#include "cycle/checks/script_keeper.h"
#include "cycle/checks/straggler_judge.h"
#include "cycle/crash_suspects.h"
#include "cycle/failure_domain.h"
#include "probes/end_evidence.h"
#include "probes/job_logs.h"
#include "probes/log_growth.h"
#include "probes/log_tail.h"
#include "probes/megatron_rank_times.h"
#include "probes/rank_timing.h"
#include "rules/cancel_held.h"
#include "rules/end_cause.h"
#include "rules/queued_restart.h"
#include "slurm/hostlist.h"
#include "slurm/hostlist_cache.h"
#include "slurm/partition_room.h"
#include "slurm/slurm_text.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/deadline_call.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

// What squeue's text form lacks (batch script, log paths), from `scontrol show job`; also asked
// for a task squeue's JSON gave no batch script (sbatch --wrap). scontrol's log paths are the
// task's own, expanded ("out-7.txt"): the JSON's pattern ("out-%j.txt") is kept where it gave
// one, or a restart's run would write over the crashed run's log.
void take_from_scontrol(SlurmJob& task, std::map<std::string, std::string> show) {
  if (show.empty()) return;
  if (task.std_out.empty()) task.std_out = show["StdOut"];
  // Its stderr where it has one of its own: scontrol names the stdout file when it has none.
  if (task.std_err.empty() && show["StdErr"] != show["StdOut"]) task.std_err = show["StdErr"];
  task.command = show["Command"];
  if (task.workdir.empty()) task.workdir = show["WorkDir"];
  if (show["Account"] != "(null)") task.account = show["Account"];
  task.partition = show["Partition"];
  task.group = show["GroupName"];
  task.gpus = gpus_in_tres(show["TRES"]);
}

// What was asked when this task was first seen, if it was. Only what Slurm told then is taken
// over: state, nodes and start time stay as squeue reports them now.
bool fill_from_last(SlurmJob& task, const std::optional<SlurmJob>& last) {
  if (!last || last->display_id() != task.display_id() || last->start_time != task.start_time ||
      last->command.empty())
    return false;
  task.std_out = last->std_out;
  task.std_err = last->std_err;
  task.command = last->command;
  task.workdir = last->workdir;
  task.account = last->account;
  task.partition = last->partition;
  task.group = last->group;
  task.gpus = last->gpus;
  return true;
}

// squeue's text form lacks the batch script and log paths: every running task not seen before
// is asked about in one call, however many started (#25: a call per new task was a burst of
// RPCs on slurmctld, at its busiest, after a maintenance window). A failed call leaves them
// as a failed `scontrol show job` did: asked again next cycle.
// A call that throws (an answer nothing can read) makes the jobs that asked it unknown this
// cycle, in `errors` by job; the others carry on.
void fill_new_tasks(CycleState& s, std::vector<std::string>& errors) {
  std::vector<size_t> asked;
  std::vector<std::string> ids;
  for (size_t i = 0; i < s.work.size(); ++i) {
    auto& w = s.work[i];
    if (!w.obs.running || !w.obs.running->command.empty()) continue;
    if (fill_from_last(*w.obs.running, w.last)) continue;
    asked.push_back(i);
    ids.push_back(w.obs.running->display_id());
  }
  if (ids.empty()) return;
  Result<JobDetails> details = Error{"not asked"};
  Status called = run_guarded("squeue's details of " + std::to_string(ids.size()) + " new tasks",
                              [&] { details = s.slurm.job_details(ids); });
  if (!called) {
    for (size_t i : asked) errors[i] = called.error();
    return;
  }
  if (!details) {
    s.errors.push_back(details.error());
    return;
  }
  for (size_t i : asked) {
    SlurmJob& task = *s.work[i].obs.running;
    if (auto it = details->find(task.display_id()); it != details->end()) {
      auto& record = it->second;  // squeue's paths are patterns; scontrol's are expanded
      for (const char* path : {"StdOut", "StdErr"})
        record[path] = expand_slurm_pattern(record[path], task);
      take_from_scontrol(task, record);
    }
  }
}

// Every file-system call below runs under the cycle's file_timeout (util/deadline_call.h): a
// hung mount makes this job unknown, never the whole cycle stuck.
using Limit = std::chrono::milliseconds;

// A switch file's mtime; absent when it is not there.
std::optional<double> mtime_of(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_mtime);
}

// The task's log files (a glob may list a directory on a hung mount).
Deadlined<std::vector<std::string>> log_paths(const JobSettings& job, const SlurmJob& task,
                                              Limit limit) {
  return call_with_deadline<std::vector<std::string>>(
      "logs of " + task.display_id(), limit,
      [patterns = log_patterns_for(job, task)] { return glob_logs(patterns); });
}

// The logs of a job whose growth the daemon samples (probes/log_growth.h): its first
// kMaxPerJob followed ones (per-rank logs: 512 files a job). Only these have samples, so the
// cycle asks after no other.
std::vector<std::string> sampled_logs(const JobProgress& p) {
  std::vector<std::string> out;
  for (auto it = p.cursors.begin(); it != p.cursors.end() && out.size() < LogGrowth::kMaxPerJob;
       ++it)
    out.push_back(it->first);
  return out;
}

// What a job's files are asked this cycle, decided before any is touched.
struct FileAsk {
  bool logs = false;  // a task runs: read its logs
  bool new_task = false;
  bool replaced_cancelled = false;  // the task it replaced was cancelled by llmwatch
};

// A job's file work for one cycle, all in one call under the deadline: the switches' mtimes,
// and a running task's logs listed, read and applied to a copy of its progress. The lines are
// applied as they are read, through a small buffer (probes/log_tail.h): no read is held, and
// the copy is the job's progress only once the call answered in time.
struct JobFiles {
  std::optional<double> kill_mtime, save_mtime;
  JobProgress progress;  // with the new lines applied (when a task runs)
  std::vector<std::pair<std::int64_t, double>> advances;
  std::string label;   // the log paths, for status and evidence
  std::string errors;  // files that could not be read
  size_t readable = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;                    // how long the call took
  std::optional<RankTimingRead> timing;  // [[job]] timing_dir, read with the logs
  // timing_from_log: Megatron's timers as this read left them, and whether that is news.
  std::shared_ptr<LogRankTimes> timers;
  bool timers_moved = false;
};

// Megatron's per-rank timers as the last read left them (timing_from_log, no timing_dir): this
// process's copy, else the store's (`run --once` is a new process each cycle); a new task's
// start afresh. Null when the job does not read them.
std::shared_ptr<LogRankTimes> timers_for(const JobWork& w, const FileAsk& ask, Store& store) {
  if (!ask.logs || !w.settings->timing_from_log || !w.settings->timing_dir.empty()) return nullptr;
  const SlurmJob& task = *w.obs.running;
  const std::string id = task.run_key();
  auto kept = take_log_rank_times(w.label);
  if (!kept)
    if (auto stored =
            LogRankTimes::from_json(store.get(kv::megatron_timers(w.label)).value_or(""))) {
      // Saved before the log's last reads (a daemon that restarted): what it had cut is not
      // where the log's cursor is now.
      if (stored->read_to != w.progress.bytes_read) stored->drop_cut();
      kept = std::make_shared<LogRankTimes>(std::move(*stored));
    }
  if (!kept || kept->task != id) {
    kept = std::make_shared<LogRankTimes>();
    kept->task = id;
  }
  return kept;
}

// A task the next one replaced between two cycles (an array's next task starts by itself):
// the lines it wrote after the last read, from its own logs, before it is counted as ended, so
// that its last step is where it stopped (a step loop compares them), not where a cycle last
// saw it. Already under the files' deadline. A log the new task writes too (one --output for
// every task) holds the new task's lines now: left to it.
void last_lines_of_ended_task(JobProgress& p, const std::vector<std::string>& new_paths,
                              const TrainingLogParser& parser, double now) {
  for (auto& [path, cursor] : p.cursors) {
    if (std::find(new_paths.begin(), new_paths.end(), path) != new_paths.end()) continue;
    ProgressUpdate update(p, parser, now);
    LogChunk chunk = scan_appended(path, cursor, {},
                                   [&](std::span<const std::string_view> lines,
                                       std::span<const std::uint64_t>) { update.feed(lines); });
    update.finish(written_time(chunk.mtime, p.last_read, now));
  }
}

// Whether that task failed, as its last lines tell it where no post-mortem is made for it:
// slurmstepd's OOM-kill or time-limit line, a CUDA or NCCL error. Nothing decisive (an end
// the lines do not explain): the crash signature it printed decides (task_ended).
std::optional<bool> failed_by_last_lines(const JobProgress& p) {
  EndEvidence e;
  e.log_tail = p.recent;
  EndClass c = classify_end(e).cls;
  if (c == EndClass::Unknown) return std::nullopt;
  return is_failure(c);
}

DeadlineTask<JobFiles> job_files(const JobWork& w, const FileAsk& ask, double now,
                                 std::shared_ptr<LogRankTimes> timers) {
  struct Task {
    std::vector<std::string> patterns;
    std::string id, regex;
    std::int64_t start_time = 0;
    double allowance = 0;  // in force before the new lines: a longer gap taught nothing
    double memory = 0;     // how long a learned step interval counts (stale_memory)
    // When the logs followed so far grew (the daemon's samples): copied here, on the cycle's
    // thread, for the read on another.
    std::map<std::string, GrowthSeries> growth;
    std::vector<std::string> hosts;  // the task's nodes, for Megatron's per-rank timers
  } t;
  if (ask.logs) {
    const SlurmJob& task = *w.obs.running;
    t = {log_patterns_for(*w.settings, task),
         task.display_id(),
         w.settings->progress_regex,
         task.start_time,
         evaluate_stale(w.progress, *w.settings, now).allowance,
         static_cast<double>(w.settings->stale_memory.count()),
         {},
         {}};
    if (timers) t.hosts = hosts_in(task.nodes);
    for (const auto& path : sampled_logs(w.progress))
      if (auto series = log_growth().series(path); !series.samples.empty())
        t.growth.emplace(path, std::move(series));
  }
  // Copied once here; the call, which runs at most once, moves it into its answer.
  auto progress = std::make_shared<JobProgress>(ask.logs ? w.progress : JobProgress{});
  return {
      "files of " + w.label,
      [t = std::move(t), progress, ask, now, timers, kill = w.settings->kill_switch,
       save = w.settings->save_switch, timing_dir = w.settings->timing_dir] {
        auto t0 = std::chrono::steady_clock::now();
        JobFiles f;
        f.kill_mtime = mtime_of(kill);
        f.save_mtime = mtime_of(save);
        // Megatron's per-rank timers, followed across reads (timing_from_log): saved only
        // when this read moved them.
        using Place = decltype(timers->place());
        const Place before = timers ? timers->place() : Place();
        if (ask.logs) {
          f.progress = std::move(*progress);
          JobProgress& p = f.progress;
          auto paths = glob_logs(t.patterns);
          for (const auto& path : paths) f.label += (f.label.empty() ? "" : " ") + path;
          TrainingLogParser parser(t.regex);
          if (ask.new_task) {
            last_lines_of_ended_task(p, paths, parser, now);
            task_ended(p, ask.replaced_cancelled, failed_by_last_lines(p));
            double started = t.start_time > 0 ? static_cast<double>(t.start_time) : now;
            start_task(p, t.id, f.label, std::min(started, now), t.start_time);
          }
          p.log_path = f.label;
          const double progress_before = p.last_progress;

          for (const auto& path : paths) {
            auto known = p.cursors.find(path);
            LogCursor cursor = known == p.cursors.end() ? LogCursor{} : known->second;
            ProgressUpdate update(p, parser, now, t.allowance, t.memory);
            std::uint64_t clocked_end = 0;  // the file offset past the last clocking line read
            LogChunk chunk = scan_appended(
                path, cursor, {},
                [&](std::span<const std::string_view> lines, std::span<const std::uint64_t> ends) {
                  if (auto i = update.feed(lines)) clocked_end = ends[*i];
                  if (timers)
                    for (auto line : lines) timers->feed(line);
                });
            const double written = written_time(chunk.mtime, p.last_read, now);
            if (timers) timers->keep_taken(written);
            // By the same file server's clock as the mtime: only where that could be true.
            double clocked = 0;
            if (auto g = t.growth.find(path); g != t.growth.end() && written == chunk.mtime)
              clocked = written_by(g->second, cursor.dev, cursor.inode, clocked_end);
            auto advances = update.finish(written, clocked);
            if (!chunk.error.empty()) {
              f.errors += (f.errors.empty() ? "" : "; ") + chunk.error;
              p.cursors.erase(path);
              continue;
            }
            p.cursors[path] = cursor;
            ++f.readable;
            f.bytes += chunk.bytes_read;
            p.bytes_read += chunk.bytes_read;
            f.advances.insert(f.advances.end(), advances.begin(), advances.end());
          }
          finish_read(p, progress_before, now);
        }
        // Beside the logs, under the same deadline: a hung mount is one unknown job.
        // A summary left by an earlier task is not this one's.
        if (ask.logs && !timing_dir.empty())
          f.timing =
              read_rank_timing(timing_dir, 6 << 10, 4096, static_cast<double>(t.start_time), now);
        if (timers) {
          f.timing = rank_timing_from_blocks(*timers, t.hosts);
          f.timers_moved = before != timers->place();  // moves with every block, kept or dropped
          f.timers = timers;
        }
        f.seconds = seconds_since(t0);
        return f;
      }};
}

constexpr size_t kTailLines = 400;  // what a post-mortem reads of the log's last lines

// The last lines the ended task printed: what the cycles before saw last, and what it wrote
// after (read from the same cursors, so nothing is read twice; its step advances join the
// cycle's). A task llmwatch never followed (it started and ended between two looks) is read
// from its logs' tails.
std::vector<std::string> final_lines(JobWork& w, double now, Limit limit) {
  const SlurmJob& task = *w.last;
  bool followed = w.progress.task == task.display_id();
  std::vector<std::string> tail;
  if (followed) tail.assign(w.progress.recent.begin(), w.progress.recent.end());
  TrainingLogParser parser(w.settings->progress_regex);
  auto paths = log_paths(*w.settings, task, limit);
  for (const auto& path : paths.value.value_or(std::vector<std::string>{})) {
    LogCursor fresh;
    LogCursor& cursor = followed ? w.progress.cursors[path] : fresh;
    LogChunk chunk = read_appended_within(path, cursor, limit);
    if (followed) {
      // Clocked at their write, as a live read is: the ledger charges the task's last steps
      // as training and only what follows them as its end (#29).
      auto advances = apply_lines(w.progress, chunk.lines, parser, now,
                                  written_time(chunk.mtime, w.progress.last_read, now));
      w.advances.insert(w.advances.end(), advances.begin(), advances.end());
    }
    // Only the last kTailLines can be kept: copy no more than those.
    auto from =
        chunk.lines.size() > kTailLines ? chunk.lines.end() - kTailLines : chunk.lines.begin();
    tail.insert(tail.end(), from, chunk.lines.end());
  }
  if (tail.size() > kTailLines) tail.erase(tail.begin(), tail.end() - kTailLines);
  return tail;
}

// The post-mortem of the last task, once, when llmwatch first finds it gone.
void post_mortem(JobWork& w, SlurmClient& slurm, double now, Limit limit) {
  if (!w.last || w.ended) return;
  SlurmJob& task = *w.last;
  bool followed = w.progress.task == task.display_id();
  // One `scontrol show job` serves both: the log paths (text mode) and the final state.
  auto show = slurm.show_job(task.display_id());
  if (task.command.empty()) take_from_scontrol(task, show);
  auto tail = final_lines(w, now, limit);
  std::optional<SlurmJob> final_entry;
  if (w.final_entry && w.final_entry->display_id() == task.display_id())
    final_entry = w.final_entry;
  EndObservation o = observe_end(slurm, task, final_entry, show, std::move(tail));
  o.evidence.cancelled_by_llmwatch = w.cancelled_by_llmwatch;
  o.evidence.reached_max_steps = followed && w.progress.max_steps && w.progress.step &&
                                 *w.progress.step >= *w.progress.max_steps;
  w.ended = make_post_mortem(task.display_id(), task.start_time, task.nodes, task.node_count,
                             task.partition, o.evidence, o.layout,
                             w.last_replaced ? w.last_troubles : w.troubles, now);
  w.ended_new = true;
}

// A crash no line attributes that may still be a node's fault (a GPU error, a network error,
// no cause at all): before the restart, a quick node-check on the nodes the task left, as a
// short job of its own (--immediate: never queued behind others), and the nodes that fail it
// become the suspects the restart avoids. Nothing found, nothing excluded.
bool wants_node_check(const CycleState& s, const JobWork& w) {
  // A task replaced by the next one: that one's arrival check looks at where the run is now.
  if (!s.config.gpu.enabled || w.obs.running || !w.ended || !w.ended->suspects.empty() ||
      !may_be_hardware(w.ended->verdict.cls) || w.ended->nodes.empty())
    return false;
  // Made this cycle, or made in an earlier one whose check did not fit its budget.
  return w.ended_new || w.ended->node_check_pending;
}

// Whether a queued restart could still land on `node`: not one out of service, on which Slurm
// places nothing.
bool in_reach(const CycleState& s, const std::string& node) {
  return std::find(s.unusable.begin(), s.unusable.end(), node) == s.unusable.end();
}

// The nodes the crash of the running task is attributed to now (its lines, its dying check),
// for a restart queued behind it, as far as it could land on them; none once the task is gone.
std::vector<std::string> suspect_nodes(const CycleState& s, const JobWork& w) {
  std::vector<std::string> out;
  if (!w.obs.running) return out;
  for (const auto& suspect : crash_suspects(s, w))
    if (in_reach(s, suspect.node)) out.push_back(suspect.node);
  return out;
}

// The ledger's repeat offenders since `queued` was queued, as far as it could land on them;
// none for a record that does not say when.
std::vector<std::string> new_repeat_offenders(const CycleState& s, const QueuedRestart& queued) {
  std::vector<std::string> out;
  if (queued.queued_at <= 0) return out;
  for (auto& node : ledger_suspects_since(s, queued.queued_at))
    if (in_reach(s, node)) out.push_back(std::move(node));
  return out;
}

// #30: the same check for a crash read while its task is still there (its other ranks hang on,
// a slow epilog), in the dying task's own allocation (srun --overlap, as the node-health check
// looks), in the cycle that reads the crash line. Before, the restart of such a crash waited
// for the task's end and a check after it, half an interval later when the task lingered; a
// check that speaks for every node now lets it be queued behind the task (act_phase), as for a
// crash whose lines name its nodes. A check that cannot run or speak leaves the end's.
bool wants_dying_check(const CycleState& s, const JobWork& w) {
  const JobProgress& p = w.progress;
  return s.config.gpu.enabled && w.obs.running && p.step && p.task == w.obs.running->display_id() &&
         may_be_node_fault(p.crash) && !p.trained_past_crash() && p.crash_seen >= s.now &&
         crash_suspects(s, w).empty();
}

// Whether the reports speak for every node of `nodes` (a hostlist).
bool speaks_for_all(const std::vector<NodeReport>& reports, const std::string& nodes) {
  std::set<std::string> spoke;
  for (const auto& r : reports)
    if (r.verdict != Verdict::Unknown) spoke.insert(r.node);
  auto all = hosts_in(nodes);
  return !all.empty() &&
         std::all_of(all.begin(), all.end(), [&](const std::string& n) { return spoke.count(n); });
}

// Every such check of the cycle at once, under its remote budget (#26.8: one after another
// they overran the cycle's deadline, and the post-mortems were made again every cycle). One
// that does not fit leaves its post-mortem pending: the end is unknown until the next cycle
// checks, and the post-mortem itself is kept, not made again.
void check_nodes_after_crashes(CycleState& s) {
  struct Asked {
    JobWork* w;
    bool dying;  // in the task, after its crash line; else on the nodes an ended task left
  };
  std::vector<Asked> jobs;
  std::vector<NodeCheckAsk> asks;
  for (auto& w : s.work) {
    if (!wants_dying_check(s, w)) continue;
    std::vector<std::string> errors;
    auto ask = ask_in_job(*w.obs.running, errors);
    for (const auto& e : errors) s.store.add_event(s.now, "node-check", w.label, "warning", e);
    if (!ask) continue;
    ask->what = "in task " + w.obs.running->display_id() + " after its crash line";
    asks.push_back(std::move(*ask));
    jobs.push_back({&w, true});
  }
  for (auto& w : s.work) {
    if (!wants_node_check(s, w)) continue;
    const PostMortem& pm = *w.ended;
    NodeCheckAsk ask{{"--nodelist=" + pm.nodes, "--ntasks-per-node=1", "--immediate=30", "--time=5",
                      "--job-name=llmwatch-node-check"},
                     "after task " + pm.task + " ended"};
    if (pm.node_count > 0) ask.placement.push_back("--nodes=" + std::to_string(pm.node_count));
    if (!pm.partition.empty()) ask.placement.push_back("--partition=" + pm.partition);
    asks.push_back(std::move(ask));
    jobs.push_back({&w, false});
  }
  auto answers = node_checks_by_srun(s.config, s.slurm, s.remote, asks);
  for (size_t i = 0; i < answers.size(); ++i) {
    JobWork& w = *jobs[i].w;
    const auto& got = answers[i];
    if (!got.error.empty()) s.store.add_event(s.now, "node-check", w.label, "warning", got.error);
    if (jobs[i].dying) {
      for (const auto& r : got.reports)
        if (r.verdict == Verdict::Critical)
          w.troubles.push_back(
              {r.node, "node-check in the task after its crash line: CRITICAL " + r.headline()});
      w.dying_checked = !got.deferred && speaks_for_all(got.reports, w.obs.running->nodes);
      continue;
    }
    w.ended_updated = w.ended->node_check_pending != got.deferred;
    w.ended->node_check_pending = got.deferred;
    for (const auto& r : got.reports)
      if (r.verdict == Verdict::Critical)
        w.ended->suspects.push_back(
            {r.node, 0.8, {"node-check after the crash: CRITICAL " + r.headline()}});
  }
}

// Megatron's timers as the read left them: held for the next cycle, and saved when they moved
// and this process has not saved them within Store::kColdEvery. `run --once` (a new process
// each cycle) so saves every move, as the next cycle needs; the daemon, which holds them, saves
// them for its own restart only: a 512-rank record is 216 KiB, and was written every cycle. A
// read that did not answer keeps nothing: the store's copy is read again.
void keep_timers(CycleState& s, const std::string& label, Deadlined<JobFiles>& got) {
  if (!got.ok() || !got.value->timers) return;
  LogRankTimes& timers = *got.value->timers;
  // A cut block or open steps kept with an older cursor are dropped by the next process to
  // restore them (timers_for): a read of other lines only (a save, an evaluation pass) moves
  // the cursor, and the record goes with it.
  const std::uint64_t read_to = got.value->progress.bytes_read;
  const bool cursor_moved = timers.read_to != read_to && timers.holds_cut();
  timers.read_to = read_to;
  const bool due = timers.saved_at <= 0 || s.now - timers.saved_at >= Store::kColdEvery ||
                   s.now < timers.saved_at;
  if ((got.value->timers_moved || cursor_moved) && due) {
    s.store.put(kv::megatron_timers(label), timers.to_json(), s.now);
    timers.saved_at = s.now;
  }
  put_log_rank_times(label, std::move(got.value->timers));
}

// Before the job's files are read: an ended task's post-mortem, or what a running one needs.
FileAsk before_files(JobWork& w, SlurmClient& slurm, double now, Limit limit) {
  if (!w.obs.running) {
    // The task we followed is gone and nothing runs: it ended (a quick death if no step).
    // Counted after the post-mortem's read of its last lines: the step it stopped at is the
    // last it printed, not the last a cycle saw (a step loop compares them across runs).
    bool last_queued = false;
    for (const auto& e : w.obs.entries)
      last_queued |= w.last && e.display_id() == w.last->display_id();
    if (!last_queued) post_mortem(w, slurm, now, limit);
    bool still_queued = false;
    for (const auto& e : w.obs.entries) still_queued |= e.display_id() == w.progress.task;
    if (!still_queued) {
      const bool ours = w.last && w.last->display_id() == w.progress.task;
      std::optional<bool> verdict;
      if (w.ended && !is_new_task(w.progress, w.ended->task, w.ended->task_start))
        verdict = is_failure(w.ended->verdict.cls);  // Slurm's word, where it has one
      task_ended(w.progress, w.cancelled_by_llmwatch && ours, verdict);
    }
    return {};
  }
  // Before the new task's read starts its progress afresh: the last lines are the old one's.
  if (w.last_replaced) post_mortem(w, slurm, now, limit);
  const SlurmJob& task = *w.obs.running;
  return {true, is_new_task(w.progress, task.display_id(), task.start_time), w.replaced_cancelled};
}

// After: the switches' ages, and a running task's progress as its new lines left it.
void after_files(JobWork& w, Deadlined<JobFiles>& got, const FileAsk& ask, double now) {
  if (got.ok()) {
    if (got.value->kill_mtime) w.obs.kill_switch_age = now - *got.value->kill_mtime;
    if (got.value->save_mtime) w.obs.save_switch_age = now - *got.value->save_mtime;
  }
  if (!ask.logs) return;
  if (!got.ok()) {
    w.obs.log_error = got.error;  // cannot tell: unknown, never "no progress"
    return;
  }
  JobFiles& f = *got.value;
  w.timing = std::move(f.timing);
  w.progress = std::move(f.progress);
  w.advances = std::move(f.advances);
  w.bytes += f.bytes;
  // No output yet is normal while a job starts up; after that it is "cannot tell". (A read
  // that hung made the whole job "cannot tell" above: what it would have shown may be
  // progress.)
  if (f.readable == 0 &&
      now - w.progress.task_seen > static_cast<double>(w.settings->startup_grace.count()))
    w.obs.log_error = f.errors.empty() ? "no log file matches " + f.label : f.errors;
}

// What the cluster looks like to a restart, built once per cycle: with 16,384 nodes and 1,000
// watched jobs, scanning sinfo per job cost a second of CPU per cycle.
struct ClusterView {
  std::unordered_map<std::string, const SlurmNode*> unusable;  // by name
  std::unordered_map<std::string, int> usable_in;              // partition -> usable nodes
  const std::vector<SlurmNode>* nodes = nullptr;               // all, when sinfo answered
  explicit ClusterView(const CycleState& s) {
    if (!s.nodes_ok()) return;
    nodes = &s.nodes->nodes;
    for (const auto& n : s.nodes->nodes) {
      if (n.unusable())
        unusable[n.name] = &n;
      else
        for (const auto& p : n.partitions) ++usable_in[p];
    }
  }
};

// The task's nodes Slurm shows out of service now: evidence against them if it crashed.
std::vector<NodeTrouble> troubles_of(const ClusterView& c, const SlurmJob& task) {
  std::vector<NodeTrouble> out;
  if (c.unusable.empty()) return out;
  thread_local HostlistCache expanded;  // a running task's list is the same every cycle
  for (const auto& name : expanded.hosts(task.nodes))
    if (auto it = c.unusable.find(name); it != c.unusable.end())
      out.push_back(
          {name, "Slurm shows it " + it->second->describe() +
                     (it->second->reason.empty() ? "" : " (" + it->second->reason + ")")});
  return out;
}

// The room a restart has in the task's partition (slurm/partition_room.h). -1 when sinfo cannot
// tell. Where squeue's text hides the task's own list, it is not subtracted here: a restart asks
// scontrol for it (act_phase), once.
int spare_nodes(const ClusterView& c, const SlurmJob& task) {
  auto it = c.usable_in.find(task.partition);
  if (it == c.usable_in.end() || !c.nodes) return -1;
  return llmwatch::spare_nodes(it->second, *c.nodes, task);
}

// squeue's text says neither when a held task was requeued nor what it excludes: scontrol does,
// asked only for a task Slurm holds after a failed launch (rare). Before, text squeue made every
// failure of a task one episode: released once ever, a failure days later not told as a new one.
// squeue --json gives the submit time: nothing is asked then.
void learn_held_task(SlurmClient& slurm, SlurmJob& task) {
  if (task.submit_time != 0) return;
  auto shown = slurm.show_job(task.control_id());
  if (shown.empty()) return;  // forgotten or unanswered: the episode stays as text gives it
  task.submit_time = slurm_timestamp(shown["SubmitTime"]);
  if (auto n = to_int64(shown["Restarts"]); n && *n > 0 && *n < (1 << 30))
    task.restarts = static_cast<int>(*n);
  if (!task.excluded_nodes) task.excluded_nodes = scontrol_field(shown, "ExcNodeList");
}

// What a task Slurm holds after a failed launch is judged with (rules/launch_failure.h). Rare:
// asked only for such a task.
LaunchFailureContext launch_failure_context(CycleState& s, const ClusterView& c,
                                            const std::string& label, const SlurmJob& task) {
  LaunchFailureContext out;
  out.nodes_known = s.nodes_ok();
  if (out.nodes_known) out.drained = launch_failure_nodes(s.nodes->nodes, task);
  for (const auto& name : hosts_in(task.required_nodes))
    if (c.unusable.count(name)) out.required_out.push_back(name);
  // A requeue sets the submit time: a release since is this failure's own, not an earlier one.
  // Text squeue prints none: learn_held_task asked scontrol. Where it could not say (0), every
  // failure of the task is one episode, and the relaunch's key lets it be released once at most.
  auto failed_at = static_cast<double>(task.submit_time);
  out.released_before = s.store.count_actions("relaunch", label, failed_at - 3600, failed_at) > 0;
  return out;
}

// What the post-mortem and the restart need from the store and Slurm, read before the
// probes run concurrently (the store is not shared across threads).
void prepare_end(CycleState& s, JobWork& w, const QueueIndex& index, const ClusterView& cluster) {
  w.final_entry = select_ended(index, *w.settings, s.config.self.job_name);
  // A task that started and ended between two looks: squeue still lists it; it is the last.
  if (w.final_entry && !w.obs.running &&
      (!w.last || w.final_entry->start_time > w.last->start_time))
    w.last = w.final_entry;
  // Only a run with a job that may wait on a dependency costs a store read here (Slurm shows
  // a new job's reason as None until its scheduler first looks at it).
  if (std::any_of(w.obs.entries.begin(), w.obs.entries.end(), [](const SlurmJob& e) {
        return e.pending() && (e.reason == "Dependency" || e.reason == "None");
      }))
    w.queued_restart =
        QueuedRestart::from_text(s.store.get(kv::queued_restart(w.label)).value_or(""));
  const auto& task = w.obs.running ? w.obs.running : w.last;
  // A run Slurm holds after its failed launch starts again as that task: its list, its size.
  const SlurmJob* held = launch_failed_entry(w.obs.entries);
  if (held) w.spare_nodes = spare_nodes(cluster, *held);
  if (!task) return;
  w.troubles = troubles_of(cluster, *task);
  if (!held) w.spare_nodes = spare_nodes(cluster, *task);
  // Another task of the run replaced the last one between two looks, and the last one is gone
  // (not a requeue: that keeps its id). Before, its end had no post-mortem: the ledger charged
  // its idle end to an unknown cause and no node, and the gap to the next start as idle too.
  if (w.obs.running && w.last && w.last->display_id() != w.obs.running->display_id() &&
      std::none_of(w.obs.entries.begin(), w.obs.entries.end(),
                   [&](const SlurmJob& e) { return e.display_id() == w.last->display_id(); })) {
    w.last_replaced = true;
    w.last_troubles = troubles_of(cluster, *w.last);
  }
  // What only an ended run needs: a running one costs no store reads here (1,000 watched
  // jobs would otherwise cost 2,000 queries a cycle).
  if ((w.obs.running && !w.last_replaced) || !w.last) return;
  // An end may be one a restart was queued behind (restart_after_cancel).
  if (!w.queued_restart)
    w.queued_restart =
        QueuedRestart::from_text(s.store.get(kv::queued_restart(w.label)).value_or(""));
  if (auto pm = PostMortem::from_json(s.store.get(kv::post_mortem(w.label)).value_or(""));
      pm && pm->same_task(w.last->display_id(), w.last->start_time))
    w.ended = std::move(pm);
  // By the task's own key: the cancel of the task before it may fall in the second it started.
  // (A minute before its start too: its start is slurmctld's clock, perhaps another host's.)
  w.cancelled_by_llmwatch =
      s.store.cancelled_task(w.last->run_key(), static_cast<double>(w.last->start_time) - 60);
}

class JobLogCheck : public Check {
 public:
  std::string name() const override { return "job-logs"; }
  int stage() const override { return 1; }
  bool enabled(const CycleState& s) const override { return s.queue_ok(); }

  void prepare(CycleState& s) override {
    // One transaction for every job's reads: outside one, each read takes and drops the
    // file's lock (two fcntl calls), a quarter of this check's CPU at 1,000 watched jobs.
    s.store.transaction([&] {
      prepare_jobs(s);
      cancels_ = s.store.cancels_done(s.now - kCancelsLookBack);
    });
    now_ = s.now;
    errors_.assign(s.work.size(), "");
    seconds_.assign(s.work.size(), 0);
  }

  void prepare_jobs(CycleState& s) {
    const QueueIndex index(s.queue->jobs);
    const ClusterView cluster(s);
    // JobWork may not move without a copy (its members' moves are not noexcept): a growing
    // vector copied every job's progress again and again.
    s.work.reserve(s.work.size() + s.config.jobs.size());
    for (const auto& job : s.config.jobs) {
      JobWork w;
      w.settings = &job;
      w.label = job_label(job);
      w.obs.entries = select_jobs(index, job, s.config.self.job_name);
      if (SlurmJob* held = launch_failed_entry(w.obs.entries)) {
        learn_held_task(s.slurm, *held);
        w.obs.launch_failure = launch_failure_context(s, cluster, w.label, *held);
      }
      if (const SlurmJob* task = running_task(w.obs.entries)) w.obs.running = *task;
      w.last = s.store.last_job(w.label);
      prepare_end(s, w, index, cluster);
      if (w.obs.entries.empty() && !w.last && !job.id)
        w.obs.similar_name = index.similar_name(job.name, job.user, s.config.self.job_name);
      w.progress = s.store.progress(w.label);
      // A task the next one replaced between two looks: whether llmwatch cancelled it (a hang),
      // for the step loop's count of failed ends. Asked only as a new task starts: rare.
      if (w.obs.running && w.progress.task_start > 0 &&
          is_new_task(w.progress, w.obs.running->display_id(), w.obs.running->start_time))
        w.replaced_cancelled =
            s.store.count_actions("cancel", w.label, static_cast<double>(w.progress.task_start)) >
            0;
      // A dump whose two rounds saw the stacks move disproved a hang: the clock restarts then.
      auto near_miss =
          nlohmann::json::parse(s.store.get(kv::near_miss(w.label)).value_or("{}"), nullptr, false);
      if (near_miss.is_object() && near_miss.value("task", "") == w.progress.task)
        seen_alive(w.progress, near_miss.value("ts", 0.0));
      // Time the clock jumped by, or llmwatch did not watch, is not the job's idle time.
      if (s.clock.shift != 0) shift_times(w.progress, s.clock.shift);
      if (!s.clock.trusted) w.obs.clock_untrusted = s.clock.why;
      s.work.push_back(std::move(w));
    }
  }

  // No job's file work costs a thread hand-off of its own (one per job was a third of the
  // cycle's CPU at 1,000 jobs): first what each job needs (a pool of four: an scontrol or a
  // post-mortem may wait), then every job's files in one batch of calls under the deadline
  // (each reads its logs through a small buffer and applies the lines as it goes, so nothing
  // read is held), then each job takes its answer.
  void observe(CycleState& s) override {
    auto limit = std::chrono::duration_cast<Limit>(s.config.file_timeout);
    std::vector<FileAsk> asks(s.work.size());
    fill_new_tasks(s, errors_);
    keep_scripts_of_wrapped_tasks(s, errors_);
    per_job(s, [&](size_t i) { asks[i] = before_files(s.work[i], s.slurm, s.now, limit); });
    std::vector<DeadlineTask<JobFiles>> calls;
    std::vector<size_t> job_of;  // call -> job
    for (size_t i = 0; i < s.work.size(); ++i) {
      if (!errors_[i].empty()) continue;
      errors_[i] = run_guarded("log of " + s.work[i].label, [&] {
                     calls.push_back(job_files(s.work[i], asks[i], s.now,
                                               timers_for(s.work[i], asks[i], s.store)));
                     job_of.push_back(i);
                   }).error();
    }
    auto files = call_all_with_deadline(std::move(calls), limit);
    for (size_t c = 0; c < files.size(); ++c) {
      size_t i = job_of[c];
      seconds_[i] +=
          files[c].ok() ? files[c].value->seconds : std::chrono::duration<double>(limit).count();
      errors_[i] = run_guarded("log of " + s.work[i].label, [&] {
                     after_files(s.work[i], files[c], asks[i], s.now);
                     keep_timers(s, s.work[i].label, files[c]);
                   }).error();
    }
    // What the daemon samples until the next cycle (probes/log_growth.h): the running tasks'
    // logs, as followed now.
    // And where this cycle's reads stopped: a crash printed after is news between ticks.
    std::vector<std::string> followed;
    std::vector<std::pair<std::string, LogCursor>> read_to;
    for (const auto& w : s.work)
      if (w.obs.running)
        for (auto& path : sampled_logs(w.progress)) {
          read_to.emplace_back(path, w.progress.cursors.at(path));
          followed.push_back(std::move(path));
        }
    log_growth().follow(std::move(followed));
    for (const auto& [path, c] : read_to) log_growth().read_upto(path, c.dev, c.inode, c.offset);
    check_nodes_after_crashes(s);
    look_for_ended_ranks(s);
  }

  CheckReport judge(CycleState& s) override {
    CheckReport r;
    for (size_t i = 0; i < s.work.size(); ++i) {
      JobWork& w = s.work[i];
      w.obs.progress = &w.progress;
      w.obs.ended = w.ended ? &*w.ended : nullptr;
      std::vector<Finding> findings;
      std::string error = errors_[i];
      if (error.empty())
        error = run_guarded("rules for " + w.label, [&] {
                  findings = evaluate_job(*w.settings, w.obs, s.now);
                  auto slow = judge_straggler(w, s.store, s.now);
                  findings.insert(findings.end(), slow.begin(), slow.end());
                  if (auto lost = cancel_not_held_in(w)) findings.push_back(std::move(*lost));
                  if (w.queued_restart) {
                    if (auto f = restart_not_needed(w.label, *w.queued_restart, w.obs.entries,
                                                    w.progress))
                      findings.push_back(std::move(*f));
                    else if (auto g = queued_restart_misses(
                                 w.label, *w.queued_restart, w.obs.entries, suspect_nodes(s, w),
                                 new_repeat_offenders(s, *w.queued_restart)))
                      findings.push_back(std::move(*g));
                  }
                  if (w.queued_restart && w.ended && w.ended_new)
                    if (auto f = restart_after_cancel(w.label, *w.queued_restart, *w.ended,
                                                      w.cancelled_by_llmwatch, w.obs.entries))
                      findings.push_back(std::move(*f));
                }).error();
      if (!error.empty()) {
        // This job is unknown this cycle: none of its findings resolves, nothing acts on it.
        Finding f = make_finding("check:job-logs/" + w.label, w.label, "failed", Severity::Unknown,
                                 "cannot evaluate " + w.label + " this cycle");
        f.evidence.push_back(error);
        r.findings.push_back(std::move(f));
        ++r.unknown;
        r.probes.push_back({"log:" + w.label, false, seconds_[i]});
        continue;
      }
      if (w.obs.running)
        r.probes.push_back({"log:" + w.label, w.obs.log_error.empty(), seconds_[i]});
      if (!w.obs.log_error.empty()) ++r.unknown;
      r.findings.insert(r.findings.end(), findings.begin(), findings.end());
      r.scopes.push_back("job:" + w.label + "/");
      s.result.log_bytes += w.bytes;
    }
    return r;
  }

 private:
  // fn(i) for every job still without an error, on a pool of four; a job whose fn fails
  // keeps the error (and is unknown this cycle). The time it took is the job's.
  template <class Fn>
  void per_job(CycleState& s, Fn fn) {
    boost::asio::thread_pool pool(4);
    for (size_t i = 0; i < s.work.size(); ++i)
      boost::asio::post(pool, [&, i] {
        if (!errors_[i].empty()) return;
        auto t0 = std::chrono::steady_clock::now();
        errors_[i] = run_guarded("log of " + s.work[i].label, [&] { fn(i); }).error();
        seconds_[i] += seconds_since(t0);
      });
    pool.join();
  }

  // The first of the job's tasks that llmwatch cancelled and Slurm still runs.
  std::optional<Finding> cancel_not_held_in(const JobWork& w) const {
    if (cancels_.empty()) return std::nullopt;
    for (const auto& e : w.obs.entries)
      if (auto done = cancels_.find(e.run_key()); done != cancels_.end())
        if (auto f = cancel_not_held(w.label, e, done->second, now_)) return f;
    return std::nullopt;
  }

  // A task runs for days at most (Slurm's time limits); a cancel older than this is of a task
  // long gone.
  static constexpr double kCancelsLookBack = 7 * 86400.0;
  std::vector<std::string> errors_;
  std::vector<double> seconds_;
  CancelsByTask cancels_;
  double now_ = 0;
};

LLMWATCH_REGISTER_CHECK(JobLogCheck);

}  // namespace
}  // namespace llmwatch
