#include "rules/job_progress.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/json_writer.h"
#include "util/strings.h"
#include "util/text.h"
#include "util/units.h"

namespace llmwatch {

namespace {
constexpr size_t kRecentLines = 6;
constexpr int kWarmupAdvances = 2;  // the first intervals include compilation and data loading
constexpr size_t kSeriesLength = 64;

// While lines are applied a series may hold up to twice its length, trimmed in one move
// rather than one per step line; ProgressUpdate::finish leaves exactly the last kSeriesLength.
// (Vectors, not deques: a JobProgress is copied and moved a few times per job per cycle, and
// each deque costs allocations to copy and even to move from.)
template <class T>
void push_bounded(std::vector<T>& v, T x) {
  v.push_back(x);
  if (v.size() >= 2 * kSeriesLength) v.erase(v.begin(), v.end() - kSeriesLength);
}
template <class T>
void trim_series(std::vector<T>& v) {
  if (v.size() > kSeriesLength) v.erase(v.begin(), v.end() - kSeriesLength);
}

// Whether a crash signature just read names the task's crash better than the one held. Python
// prints "Traceback (most recent call last):" first and the exception (an NCCL or CUDA error)
// last: the specific name replaces the generic one while no step came between. And a fatal
// error after a crash the run trained past (a handled retry) is a new crash; another handled
// traceback is not.
bool replaces_crash(const JobProgress& p, const std::string& seen) {
  if (p.crash.empty()) return true;
  if (p.trained_past_crash()) return fatal_crash_signature(seen);
  return p.crash == "python-traceback" && seen != "python-traceback";
}

template <class T>
std::optional<T> opt_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<T>();
}

}  // namespace

// Written by hand (util/json_writer.h): the daemon writes 1,000 of these a cycle. Every
// field from_json reads that is not at its default; a time that is not finite is left out, so
// it reads back as 0.
std::string JobProgress::to_json() const {
  return write(true, true);
}
std::string JobProgress::hot_json() const {
  return write(true, false);
}
std::string JobProgress::cold_json() const {
  return write(false, true);
}

// A field at its default (from_json's) is left out: the hot part is rewritten for every
// running job every cycle, and half of its bytes were zeros, nulls and falses.
std::string JobProgress::write(bool hot, bool cold) const {
  JsonWriter w;
  auto number = [&w](const char* key, auto v, decltype(v) fallback) {
    if (v != fallback) w.key(key).value(v);
  };
  auto time = [&w](const char* key, double t) {
    if (std::isfinite(t) && t != 0) w.key(key).value(t);
  };
  auto text = [&w](const char* key, const std::string& v) {
    if (!v.empty()) w.key(key).value(v);
  };
  auto flag = [&w](const char* key, bool v) {
    if (v) w.key(key).value(true);
  };
  auto optional = [&w](const char* key, const auto& v) {
    if (v) w.key(key).value(*v);
  };
  auto series = [&w](const char* key, const auto& values) {
    w.key(key).begin_array();
    for (const auto& v : values) w.value(v);
    w.end_array();
  };
  w.begin_object();
  if (cold) {
    series("recent", recent);
    series("step_times", step_times);
    series("losses", losses);
  }
  if (!hot) return w.end_object().take();
  text("task", task);
  number("task_start", task_start, std::int64_t{0});
  text("log_path", log_path);
  if (!cursors.empty()) {
    w.key("cursors").begin_object();
    for (const auto& [path, c] : cursors)
      w.key(path).begin_array().value(c.dev).value(c.inode).value(c.offset).end_array();
    w.end_object();
  }
  time("task_seen", task_seen);
  number("best_step", best_step, std::int64_t{-1});
  time("last_progress", last_progress);
  time("longest_interval", longest_interval);
  if (!interval_peaks.empty()) {
    w.key("interval_peaks").begin_array();
    for (const auto& [since, longest] : interval_peaks)
      w.begin_array().value(since).value(longest).end_array();
    w.end_array();
  }
  time("last_read", last_read);
  time("silent_until", silent_until);
  time("seen_alive_from", seen_alive_from);
  time("observed_interval", observed_interval);
  number("advances", advances, 0);
  time("checkpoint_since", checkpoint_since);
  time("checkpoint_done", checkpoint_done);
  time("checkpoint_began", checkpoint_began);
  time("evaluation_since", evaluation_since);
  time("restart_since", restart_since);
  text("crash", crash);
  number("crash_advances", crash_advances, 0);
  time("crash_seen", crash_seen);
  time("crash_written", crash_written);
  flag("crash_sticky", crash_sticky);
  number("crash_rank", crash_rank, -1);
  flag("crash_by_task", crash_by_task);
  time("crash_rank_looked", crash_rank_looked);
  flag("crash_rank_ended", crash_rank_ended);
  time("slurm_ending_read", slurm_ending_read);
  number("bytes_read", bytes_read, std::uint64_t{0});
  time("series_at", series_at);
  number("quick_deaths", quick_deaths, 0);
  optional("consumed_samples", consumed_samples);
  optional("global_batch_size", global_batch_size);
  number("samples_stalled", samples_stalled, 0);
  flag("nan_loss", nan_loss);
  optional("skipped_iterations", skipped_iterations);
  optional("nan_iterations", nan_iterations);
  flag("counters_rising", counters_rising);
  flag("after_checkpoint", after_checkpoint);
  time("checkpoint_interval", checkpoint_interval);
  optional("save_seconds", save_seconds);
  optional("load_seconds", load_seconds);
  text("counted_task", counted_task);
  number("step_ends", step_ends, 0);
  optional("end_step", end_step);
  text("end_step_tasks", end_step_tasks);
  if (!end_step_episodes.empty()) series("end_step_episodes", end_step_episodes);
  optional("step", step);
  optional("max_steps", max_steps);
  if (step_time && std::isfinite(*step_time)) w.key("step_time").value(*step_time);
  if (loss && std::isfinite(*loss)) w.key("loss").value(*loss);
  w.end_object();
  return w.take();
}

namespace {
// The cold fields, where a document has them (a whole to_json, or a cold_json).
void read_cold_fields(JobProgress& p, const nlohmann::json& j) {
  if (j.contains("recent") && j["recent"].is_array()) {
    p.recent.clear();
    for (const auto& line : j["recent"])
      if (line.is_string()) p.recent.push_back(line.get<std::string>());
  }
  if (j.contains("step_times") && j["step_times"].is_array()) {
    p.step_times.clear();
    for (const auto& v : j["step_times"])
      if (v.is_number()) p.step_times.push_back(v.get<double>());
  }
  if (j.contains("losses") && j["losses"].is_array()) {
    p.losses.clear();
    for (const auto& v : j["losses"])
      if (v.is_number()) p.losses.push_back(v.get<double>());
  }
}
}  // namespace

void JobProgress::read_cold(JobProgress& p, const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object()) read_cold_fields(p, j);
}

JobProgress JobProgress::from_json(const std::string& text) {
  JobProgress p;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return p;
  read_cold_fields(p, j);
  p.task = j.value("task", "");
  p.task_start = j.value("task_start", std::int64_t{0});
  p.log_path = j.value("log_path", "");
  if (j.contains("cursors") && j["cursors"].is_object())
    for (const auto& [path, c] : j["cursors"].items())
      if (c.is_array() && c.size() == 3)
        p.cursors[path] = {c[0].get<std::uint64_t>(), c[1].get<std::uint64_t>(),
                           c[2].get<std::uint64_t>()};
  p.task_seen = j.value("task_seen", 0.0);
  p.best_step = j.value("best_step", std::int64_t{-1});
  p.last_progress = j.value("last_progress", 0.0);
  p.longest_interval = j.value("longest_interval", 0.0);
  if (j.contains("interval_peaks") && j["interval_peaks"].is_array())
    for (const auto& peak : j["interval_peaks"])
      if (peak.is_array() && peak.size() == 2 && peak[0].is_number() && peak[1].is_number() &&
          p.interval_peaks.size() < JobProgress::kMaxIntervalPeaks)
        p.interval_peaks.emplace_back(peak[0].get<double>(), peak[1].get<double>());
  p.last_read = j.value("last_read", 0.0);
  p.silent_until = j.value("silent_until", 0.0);
  p.seen_alive_from = j.value("seen_alive_from", 0.0);
  p.observed_interval = j.value("observed_interval", 0.0);
  p.advances = j.value("advances", 0);
  p.checkpoint_since = j.value("checkpoint_since", 0.0);
  p.checkpoint_done = j.value("checkpoint_done", 0.0);
  p.checkpoint_began = j.value("checkpoint_began", 0.0);
  p.evaluation_since = j.value("evaluation_since", 0.0);
  p.restart_since = j.value("restart_since", 0.0);
  p.crash = j.value("crash", "");
  p.crash_advances = j.value("crash_advances", 0);
  p.crash_seen = j.value("crash_seen", 0.0);
  p.crash_written = j.value("crash_written", 0.0);
  p.crash_sticky = j.value("crash_sticky", false);
  p.crash_rank = j.value("crash_rank", -1);
  p.crash_by_task = j.value("crash_by_task", false);
  p.crash_rank_looked = j.value("crash_rank_looked", 0.0);
  p.crash_rank_ended = j.value("crash_rank_ended", false);
  p.slurm_ending_read = j.value("slurm_ending_read", 0.0);
  p.bytes_read = j.value("bytes_read", std::uint64_t{0});
  p.series_at = j.value("series_at", 0.0);
  p.quick_deaths = j.value("quick_deaths", 0);
  p.consumed_samples = opt_from<double>(j, "consumed_samples");
  p.global_batch_size = opt_from<double>(j, "global_batch_size");
  p.samples_stalled = j.value("samples_stalled", 0);
  p.nan_loss = j.value("nan_loss", false);
  p.skipped_iterations = opt_from<std::int64_t>(j, "skipped_iterations");
  p.nan_iterations = opt_from<std::int64_t>(j, "nan_iterations");
  p.counters_rising = j.value("counters_rising", false);
  p.after_checkpoint = j.value("after_checkpoint", false);
  p.checkpoint_interval = j.value("checkpoint_interval", 0.0);
  p.save_seconds = opt_from<double>(j, "save_seconds");
  p.load_seconds = opt_from<double>(j, "load_seconds");
  p.counted_task = j.value("counted_task", "");
  p.step_ends = j.value("step_ends", 0);
  p.end_step = opt_from<std::int64_t>(j, "end_step");
  p.end_step_tasks = j.value("end_step_tasks", "");
  if (j.contains("end_step_episodes") && j["end_step_episodes"].is_array())
    for (const auto& e : j["end_step_episodes"])
      if (e.is_string()) p.end_step_episodes.push_back(e.get<std::string>());
  p.step = opt_from<std::int64_t>(j, "step");
  p.max_steps = opt_from<std::int64_t>(j, "max_steps");
  p.step_time = opt_from<double>(j, "step_time");
  p.loss = opt_from<double>(j, "loss");
  return p;
}

bool is_new_task(const JobProgress& p, const std::string& task, std::int64_t task_start) {
  if (p.task != task) return true;
  return task_start > 0 && p.task_start > 0 && task_start != p.task_start;
}

void shift_times(JobProgress& p, double seconds) {
  for (double* t :
       {&p.task_seen, &p.last_progress, &p.checkpoint_since, &p.checkpoint_done,
        &p.checkpoint_began, &p.evaluation_since, &p.restart_since, &p.last_read, &p.silent_until,
        &p.seen_alive_from, &p.crash_seen, &p.crash_written, &p.slurm_ending_read})
    if (*t > 0) *t += seconds;
  for (auto& peak : p.interval_peaks) peak.first += seconds;
}

void start_task(JobProgress& p, const std::string& task, const std::string& log_path,
                double started, std::int64_t task_start) {
  JobProgress fresh;
  fresh.task = task;
  fresh.task_start = task_start;
  fresh.log_path = log_path;
  fresh.task_seen = started;
  fresh.best_step = p.best_step;
  fresh.max_steps = p.max_steps;
  fresh.bytes_read = p.bytes_read;
  fresh.quick_deaths = p.quick_deaths;
  fresh.step_times = p.step_times;  // the run's baseline survives a restart
  fresh.losses = p.losses;
  fresh.save_seconds = p.save_seconds;
  fresh.checkpoint_interval = p.checkpoint_interval;
  fresh.checkpoint_done = p.checkpoint_done;
  fresh.checkpoint_began = p.checkpoint_began;
  fresh.counted_task = p.counted_task;
  fresh.step_ends = p.step_ends;
  fresh.end_step = p.end_step;
  fresh.end_step_tasks = p.end_step_tasks;
  fresh.end_step_episodes = p.end_step_episodes;
  if (log_path == p.log_path) fresh.cursors = p.cursors;
  p = std::move(fresh);
}

std::vector<std::pair<std::int64_t, double>> apply_lines(JobProgress& p,
                                                         const std::vector<std::string>& lines,
                                                         const TrainingLogParser& parser,
                                                         double now, double written) {
  std::vector<std::string_view> views(lines.begin(), lines.end());
  return apply_lines(p, views, parser, now, written);
}

ProgressUpdate::ProgressUpdate(JobProgress& p, const TrainingLogParser& parser, double now,
                               double allowance, double memory)
    : p_(p),
      parser_(parser),
      now_(now),
      step_before_(p.step),
      progress_before_(p.last_progress),
      allowance_(allowance),
      memory_(memory),
      phase_under_way_(p.checkpoint_since > 0 || p.evaluation_since > 0 || p.restart_since > 0) {}

std::optional<size_t> ProgressUpdate::feed(std::span<const std::string_view> lines) {
  JobProgress& p = p_;
  const double now = now_;
  std::optional<size_t> clocked;  // the last line that set one of the read's clocks
  size_t keep_from = lines.size();
  for (size_t kept = 0; keep_from > 0 && kept < kRecentLines; --keep_from)
    kept += !trim(lines[keep_from - 1]).empty();
  for (const auto& raw : lines) {
    if (trim(raw).empty()) continue;
    LogLine line = parser_.parse(raw);
    // Only the batch's last non-blank lines can stay among the recent ones: no copy of the rest.
    if (static_cast<size_t>(&raw - lines.data()) >= keep_from) {
      p.recent.push_back(sanitize_line(raw, 300));
      if (p.recent.size() > kRecentLines) p.recent.erase(p.recent.begin());
    }
    const size_t at = static_cast<size_t>(&raw - lines.data());
    if (line.checkpoint_start) {
      p.checkpoint_since = p.checkpoint_began = now;
      set_ |= kCheckpointSince | kCheckpointBegan;
      clocked = at;
    }
    if (line.evaluation && p.evaluation_since == 0)
      p.evaluation_since = now, set_ |= kEvaluationSince, clocked = at;
    // The latest restart's: each node's launcher says it, and a later round loads again.
    if (line.workers_restart) p.restart_since = now, set_ |= kRestartSince, clocked = at;
    if (line.checkpoint_end) {
      clocked = at;
      p.checkpoint_since = 0;
      set_ &= ~kCheckpointSince;
      if (p.checkpoint_done > 0 && now > p.checkpoint_done)
        p.checkpoint_interval = now - p.checkpoint_done, set_ |= kCheckpointInterval;
      p.checkpoint_done = now;
      set_ |= kCheckpointDone;
    }
    if (line.slurm_ends_task) p.slurm_ending_read = now_;
    // What a task prints once Slurm said it ends it is the end's doing (its processes'
    // SIGTERM tracebacks), judged with its end: no crash of its own.
    const bool own = !p.slurm_ending(now_);
    if (own && !line.crash.empty() && replaces_crash(p, line.crash)) {
      if (p.crash.empty() || p.trained_past_crash()) p.crash_advances = p.advances;
      p.crash = line.crash;
      p.crash_seen = p.crash_written = now_;
      set_ |= kCrashWritten;
      p.crash_sticky = line.crash_sticky;
      p.crash_rank = line.crash_rank, p.crash_by_task = line.crash_by_task;
      p.crash_rank_looked = 0, p.crash_rank_ended = false;
    } else if (own && line.crash_sticky && !p.crash_sticky && fatal_crash_signature(p.crash) &&
               !p.trained_past_crash() &&
               (line.crash.empty() || fatal_crash_signature(line.crash))) {
      // The fatal crash held, now in words that say its process cannot go on: a sticky CUDA
      // error after a caught one, NCCL's watchdog taking the process down after its timeout.
      p.crash_sticky = true;
    }
    if (line.max_steps) p.max_steps = line.max_steps;
    if (line.save_seconds) p.save_seconds = line.save_seconds;
    if (line.load_seconds) p.load_seconds = line.load_seconds;
    if (line.checkpoint_start || line.checkpoint_end) p.after_checkpoint = true;
    if (!line.step) continue;
    if (line.step_time) p.step_time = line.step_time;
    if (line.loss) p.loss = line.loss;
    if (p.step && *line.step == *p.step) continue;  // a repeated step is not progress
    if (p.step && *line.step < *p.step) {
      // A newly printed lower step is a run that resumed from an earlier checkpoint (an
      // in-job restart, or a requeue seen as the same task): it is progress, but no interval
      // sample for the step-time baseline.
      p.step = line.step;
      p.last_progress = now;
      set_ |= kProgress;
      p.checkpoint_since = 0;
      p.evaluation_since = 0;
      p.restart_since = 0;
      set_ &= ~(kCheckpointSince | kEvaluationSince | kRestartSince);
      p.quick_deaths = 0;
      advances_.emplace_back(*line.step, now);
      clocked = at;
      continue;
    }
    // Training health. A step right after a save includes the save: keep it out of the
    // step-time baseline.
    if (line.step_time && !p.after_checkpoint) push_bounded(p.step_times, *line.step_time);
    p.after_checkpoint = false;
    if (line.loss) {
      if (std::isfinite(*line.loss))
        push_bounded(p.losses, *line.loss);
      else
        p.nan_loss = true;
    }
    if (line.consumed_samples) {
      if (p.consumed_samples && *line.consumed_samples <= *p.consumed_samples)
        ++p.samples_stalled;
      else
        p.samples_stalled = 0;
      p.consumed_samples = line.consumed_samples;
    }
    if (line.global_batch_size) p.global_batch_size = line.global_batch_size;
    auto rising = [](const std::optional<std::int64_t>& before,
                     const std::optional<std::int64_t>& now_v) {
      return before && now_v && *now_v > *before;
    };
    if (rising(p.skipped_iterations, line.skipped_iterations) ||
        rising(p.nan_iterations, line.nan_iterations))
      counters_rose_ = true;
    if (line.skipped_iterations) p.skipped_iterations = line.skipped_iterations;
    if (line.nan_iterations) p.nan_iterations = line.nan_iterations;
    if (p.step) ++p.advances;
    phase_ |= phase_under_way_;  // this step ended a save or an evaluation pass
    p.step = line.step;
    p.quick_deaths = 0;                                           // progress ends any crash loop
    if (p.end_step && *line.step > *p.end_step) p.step_ends = 0;  // and one past a step loop's
    p.best_step = std::max(p.best_step, *line.step);
    p.last_progress = now;
    set_ |= kProgress;
    p.checkpoint_since = 0;  // a step after a save means the save is over
    p.evaluation_since = 0;  // and after an evaluation pass, that the pass is over
    p.restart_since = 0;     // and after a restart of the workers, that they run again
    set_ &= ~(kCheckpointSince | kEvaluationSince | kRestartSince);
    advances_.emplace_back(*line.step, now);
    clocked = at;
  }
  return clocked;
}

// Lines arrive in batches, one read per cycle: the time between progress observations is
// quantized by the cycle interval. The step interval is that time divided by the steps the
// whole read covered, so a 0.5 s step watched every 5 s counts as 0.5 s, not 5 s.
std::vector<std::pair<std::int64_t, double>> ProgressUpdate::finish(double written,
                                                                    double clocks_written) {
  JobProgress& p = p_;
  trim_series(p.step_times);
  trim_series(p.losses);
  // The clocks these lines set move from the time of the read to the time of the write (a write
  // at the read's very time still moves them to the lines' own, below).
  if (written > 0 && written <= now_) {
    // A crash line was written by the read's mtime at the latest (lines after it only move
    // that on), not at the read, which the sampler brings up to 5 s later: a dying task's 8 s
    // count from there. Not the clocking lines' write: those came before it.
    if (set_ & kCrashWritten) p.crash_written = written;
    // Where the log's growth tells the clocking lines apart from the lines after them (a hung
    // rank's heartbeats), the write of the last of them: the others came before it.
    if (clocks_written > 0 && clocks_written < written) written = clocks_written;
    if (set_ & kProgress) p.last_progress = written;
    if (set_ & kCheckpointSince) p.checkpoint_since = written;
    if (set_ & kCheckpointDone) p.checkpoint_done = written;
    if (set_ & kCheckpointBegan) p.checkpoint_began = written;
    if (set_ & kCheckpointInterval) p.checkpoint_interval -= now_ - written;
    if (set_ & kEvaluationSince) p.evaluation_since = written;
    if (set_ & kRestartSince) p.restart_since = written;
    for (auto& advance : advances_) advance.second = written;
  }
  const double at = (set_ & kProgress) ? p.last_progress : now_;
  const auto& step_before = step_before_;
  if (p.step && (!step_before || *p.step > *step_before)) p.counters_rising = counters_rose_;
  bool was_a_hang = allowance_ > 0 && at - progress_before_ > allowance_;
  // The read stepped past the step before it, after warm-up and outside a save or evaluation
  // pass: what it shows of the run's intervals can be learned.
  const bool learns =
      step_before && p.step && *p.step > *step_before && p.advances > kWarmupAdvances && !phase_;
  if (learns && progress_before_ > 0 && !was_a_hang) {
    double per_step = (at - progress_before_) / static_cast<double>(*p.step - *step_before);
    // A log seen silent at a read between the two steps: the run stays silent that long while
    // healthy (a buffered logger), whatever the steps' own length.
    double sample = per_step;
    if (p.silent_until > progress_before_ && p.silent_until < at)
      sample = std::max(sample, p.silent_until - progress_before_);
    learn_interval(p, sample, at, memory_);
    p.observed_interval =
        p.observed_interval > 0 ? 0.7 * p.observed_interval + 0.3 * per_step : per_step;
  }
  if (p.seen_alive_from > 0 && step_before && p.step && *p.step > *step_before) {
    // The silence a near miss saw the run alive through, now that it stepped: at least until the
    // near miss and the last read that found it silent.
    const double silence = std::max(p.silent_until, progress_before_) - p.seen_alive_from;
    if (learns && silence > 0) learn_interval(p, silence, at, memory_);
    p.seen_alive_from = 0;
  }
  return std::move(advances_);
}

void learn_interval(JobProgress& p, double sample, double at, double memory) {
  auto& peaks = p.interval_peaks;
  if (memory <= 0) {
    peaks.clear();
    p.longest_interval = std::max(p.longest_interval, sample);
    return;
  }
  // An interval learned before the stretches were kept (a state from an older llmwatch, or
  // memory turned on): it counts from now.
  if (peaks.empty() && p.longest_interval > 0) peaks.emplace_back(at, p.longest_interval);
  const double stretch = memory / JobProgress::kIntervalStretches;
  // A new stretch every `stretch`; a clock that went back (a jump not seen as one) joins the
  // latest.
  if (peaks.empty() || at - peaks.back().first >= stretch)
    peaks.emplace_back(at, sample);
  else
    peaks.back().second = std::max(peaks.back().second, sample);
  // Every interval of the oldest stretch is older than memory: forgotten. The newest stays.
  while (peaks.size() > 1 && (peaks.front().first + stretch <= at - memory ||
                              peaks.size() > JobProgress::kMaxIntervalPeaks))
    peaks.erase(peaks.begin());
  p.longest_interval = 0;
  for (const auto& peak : peaks) p.longest_interval = std::max(p.longest_interval, peak.second);
}

std::vector<std::pair<std::int64_t, double>> apply_lines(JobProgress& p,
                                                         std::span<const std::string_view> lines,
                                                         const TrainingLogParser& parser,
                                                         double now, double written) {
  ProgressUpdate update(p, parser, now);
  update.feed(lines);
  return update.finish(written);
}

double written_time(double mtime, double last_read, double now) {
  if (mtime <= 0 || last_read <= 0) return now;  // the first read: nothing bounds the mtime
  return mtime >= last_read && mtime <= now ? mtime : now;
}

void seen_alive(JobProgress& p, double at) {
  if (at <= p.last_progress) return;
  // In training: the silence is measured from its last step (a later near miss in the same
  // silence keeps where it began). Before the first step there is no interval to learn.
  if (p.step && p.seen_alive_from <= 0) p.seen_alive_from = p.last_progress;
  p.last_progress = at;
}

void finish_read(JobProgress& p, double progress_before, double now) {
  p.silent_until = p.last_progress != progress_before || !p.step ? 0 : now;
  p.last_read = now;
}

std::string task_episode(const std::string& task, std::int64_t start) {
  return task + "@" + std::to_string(start);
}

void task_ended(JobProgress& p, bool cancelled_by_llmwatch, std::optional<bool> failed_by_verdict) {
  if (p.task.empty() || p.counted_task == p.task) return;
  p.counted_task = p.task;
  if (!p.step) {
    ++p.quick_deaths;
    return;  // no step: neither at the loop's step nor past it
  }
  const bool failed = cancelled_by_llmwatch ||
                      failed_by_verdict.value_or(!p.crash.empty() && !p.trained_past_crash());
  if (!failed) {
    p.step_ends = 0;
    p.end_step.reset();
    p.end_step_tasks.clear();
    p.end_step_episodes.clear();
    return;
  }
  if (p.end_step && *p.step == *p.end_step) {
    ++p.step_ends;
    // The last few ids are enough to name the loop; the count says how long it is.
    auto cut = p.end_step_tasks.find(", ");
    if (p.step_ends > 4 && cut != std::string::npos) p.end_step_tasks.erase(0, cut + 2);
    p.end_step_tasks += ", " + p.task;
  } else {
    p.step_ends = 1;
    p.end_step = p.step;
    p.end_step_tasks = p.task;
    p.end_step_episodes.clear();
  }
  if (p.end_step_episodes.size() >= JobProgress::kLoopEpisodes)
    p.end_step_episodes.erase(p.end_step_episodes.begin());
  p.end_step_episodes.push_back(task_episode(p.task, p.task_start));
}

bool fatal_crash_signature(std::string_view crash) {
  return crash == "nccl-error" || crash == "nccl-timeout" || crash == "cuda-error";
}

bool may_be_node_fault(std::string_view crash) {
  return fatal_crash_signature(crash) || crash == "xid";
}

bool waits_after_fatal_crash(const JobProgress& p) {
  // Not while the launcher restarts its workers: the ranks that printed the crash are gone, and
  // the new ones load the run again (startup_grace bounds that, as at the run's start).
  return p.step && p.longest_interval > 0 && fatal_crash_signature(p.crash) &&
         !p.trained_past_crash() && p.crash_seen >= p.last_progress && p.restart_since <= 0;
}

double confirm_gap(const JobProgress& p, const JobSettings& job) {
  const double configured = static_cast<double>(job.confirm_hang.count());
  if (!waits_after_fatal_crash(p)) return configured;
  // After a line its process cannot go on from no rank can run a step between the dumps.
  const double interval = p.crash_sticky ? 0 : p.longest_interval;
  return std::min(configured, std::max(kAfterFatalCrashConfirmFloor, interval));
}

double fatal_line_at(const JobProgress& p) {
  return p.crash_written > 0 ? std::min(p.crash_written, p.crash_seen) : p.crash_seen;
}

double rank_look_due(const JobProgress& p) {
  if (!waits_after_fatal_crash(p) || p.crash_sticky ||
      2 * p.longest_interval <= kAfterFatalCrashFloor)
    return 0;
  const double line = fatal_line_at(p);
  if (p.crash_rank_looked <= 0) return line + kRankFirstLook;
  if (p.crash_rank_looked >= line + kAfterFatalCrashFloor) return 0;  // the second was taken
  return std::max(line + kAfterFatalCrashFloor, p.crash_rank_looked + kRankLookGap);
}

StaleVerdict evaluate_stale(const JobProgress& p, const JobSettings& job, double now) {
  StaleVerdict v;
  if (!p.step) {
    v.phase = "startup";
    // A near miss (stacks seen moving) restarts this clock too.
    v.idle = now - std::max(p.task_seen, p.last_progress);
    v.allowance = static_cast<double>(job.startup_grace.count());
    v.how = "startup_grace";
  } else {
    v.phase = "training";
    // After a save the next step is due one step interval after the save, not after the
    // step before it.
    v.idle = now - std::max(p.last_progress, p.checkpoint_done);
    if (job.stale_after) {
      v.allowance = static_cast<double>(job.stale_after->count());
      v.how = "stale_after";
    } else {
      const double floor = static_cast<double>(job.stale_floor.count());
      const double ceiling = static_cast<double>(job.stale_ceiling.count());
      if (p.longest_interval <= 0) {
        // Nothing learned yet: the first steps' grace, or the floor if that is longer.
        const double first = static_cast<double>(job.first_steps_grace.count());
        v.allowance = std::min(std::max(first, floor), ceiling);
        v.how = std::string(first > floor ? "first_steps_grace" : "stale_floor") +
                ", no step interval learned yet";
      } else {
        double adaptive = job.stale_factor * p.longest_interval;
        v.allowance = std::clamp(adaptive, floor, ceiling);
        char factor[16];
        std::snprintf(factor, sizeof factor, "%g", job.stale_factor);
        std::string times = std::string(factor) + " x " + format_seconds(p.longest_interval);
        v.how = adaptive < floor ? "stale_floor; " + times + " longest step interval is less"
                : adaptive > ceiling
                    ? "stale_ceiling; " + times + " longest step interval is more"
                    : times + " longest step interval (floor " + format_seconds(floor) + ")";
      }
    }
    // A rank printed a fatal error (a collective's or the GPU's) and no step came after it:
    // that rank is gone, and the others wait in a collective that will not complete until
    // NCCL's own timeout (10 minutes or more) ends them, unless srun kills them first. The run
    // is given two of its longest step intervals, not its full allowance: the task's own end
    // (a torchrun teardown) comes within seconds and is restarted by the crash path; a run
    // that handled the error steps again within an interval; and a hang found here is still
    // dumped and confirmed (confirm_hang) before anything is cancelled.
    // Only while nothing showed life since the line: a near miss (its stacks seen moving: an
    // elastic trainer rebuilding its communicators) restarts last_progress past it, and the run
    // then has its full allowance again.
    // A sticky CUDA error (an illegal memory access, an uncorrectable ECC error) ends that
    // process's CUDA for good, and NCCL's watchdog taking its process down ends the process:
    // no rank can step again, however long its steps. The run gets the floor from the line's
    // write (the read's mtime; its read where that is not known), not from the last step (a
    // line late in a 10 s step would leave the task no time to end by itself). Slow steps kept
    // such a lingering task 2 x 10 s and a 10 s confirmation from its restart.
    if (waits_after_fatal_crash(p)) {
      const double twice_interval = 2 * p.longest_interval;
      const double by_steps = std::max(kAfterFatalCrashFloor, twice_interval);
      // From the line's write where the log told it (never after its read).
      const double line_at = fatal_line_at(p);
      const double line_after = line_at - std::max(p.last_progress, p.checkpoint_done);
      const double by_line = std::max(kAfterFatalCrashFloor, line_after + kAfterFatalCrashFloor);
      // Never later than two intervals all the same (a sticky line read late).
      const bool sticky = p.crash_sticky && by_line < by_steps;
      const double after_crash = sticky ? by_line : by_steps;
      if (after_crash < v.allowance) {
        v.allowance = after_crash;
        const std::string why = " line (its other ranks wait in a collective)";
        // Said as it was worked out: the floor where two intervals are less.
        const std::string twice =
            "2 x " + format_seconds(p.longest_interval) + " longest step interval";
        if (sticky && p.crash_rank_ended)
          v.how =
              format_seconds(kAfterFatalCrashFloor) + " after a " + p.crash +
              " line whose rank's process has since ended or is exiting (its other ranks wait in a "
              "collective), whatever its step interval (no rank steps again)";
        else if (sticky)
          v.how = format_seconds(kAfterFatalCrashFloor) + " after a " + p.crash +
                  " line its process cannot go on from (its other ranks wait in a collective), "
                  "whatever its step interval (no rank steps again)";
        else
          v.how = (twice_interval < kAfterFatalCrashFloor
                       ? format_seconds(kAfterFatalCrashFloor) + " (" + twice + " is less)"
                       : twice) +
                  " after a " + p.crash + why;
      }
    }
    if (p.evaluation_since > 0) {
      v.phase = "evaluation";
      // An evaluation pass gets its own grace, counted from when it began.
      double grace =
          p.evaluation_since - p.last_progress + static_cast<double>(job.evaluation_grace.count());
      if (grace > v.allowance) v.allowance = grace, v.how = "evaluation_grace from its start";
    }
    if (p.restart_since > 0) {
      // torchrun or ft_launcher restarts its worker group in the job (--max-restarts): the
      // new workers rendezvous and load the model and its checkpoint before they step, as a
      // run does at its start, so they get the startup grace from the restart's line. Without
      // it a crash's short wait cancelled a run its launcher was already restarting.
      v.phase = "restart";
      double grace =
          p.restart_since - p.last_progress + static_cast<double>(job.startup_grace.count());
      if (grace > v.allowance)
        v.allowance = grace, v.how = "startup_grace from the launcher's restart of its workers";
    }
    if (p.checkpoint_since > 0) {
      v.phase = "checkpoint";
      // A save gets its own grace, counted from when it began.
      double grace = p.checkpoint_since - p.last_progress + job.checkpoint_grace.count();
      if (grace > v.allowance)
        v.allowance = grace, v.how = "checkpoint_grace from the save's start";
    }
  }
  v.hung = v.idle > v.allowance;
  return v;
}

}  // namespace llmwatch
