#include "rules/job_progress.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace llmwatch {

namespace {
constexpr size_t kRecentLines = 6;
constexpr int kWarmupAdvances = 2;  // the first intervals include compilation and data loading
nlohmann::json cursors_json(const std::map<std::string, LogCursor>& cursors) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [path, c] : cursors) out[path] = {c.dev, c.inode, c.offset};
  return out;
}

}  // namespace

std::string JobProgress::to_json() const {
  nlohmann::json j = {{"task", task},
                      {"log_path", log_path},
                      {"cursors", cursors_json(cursors)},
                      {"task_seen", task_seen},
                      {"best_step", best_step},
                      {"last_progress", last_progress},
                      {"longest_interval", longest_interval},
                      {"advances", advances},
                      {"checkpoint_since", checkpoint_since},
                      {"checkpoint_done", checkpoint_done},
                      {"crash", crash},
                      {"recent", recent},
                      {"bytes_read", bytes_read},
                      {"quick_deaths", quick_deaths},
                      {"counted_task", counted_task}};
  if (step) j["step"] = *step;
  if (max_steps) j["max_steps"] = *max_steps;
  if (step_time) j["step_time"] = *step_time;
  if (loss && std::isfinite(*loss)) j["loss"] = *loss;
  return j.dump();
}

JobProgress JobProgress::from_json(const std::string& text) {
  JobProgress p;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return p;
  p.task = j.value("task", "");
  p.log_path = j.value("log_path", "");
  if (j.contains("cursors") && j["cursors"].is_object())
    for (const auto& [path, c] : j["cursors"].items())
      if (c.is_array() && c.size() == 3)
        p.cursors[path] = {c[0].get<std::uint64_t>(), c[1].get<std::uint64_t>(), c[2].get<std::uint64_t>()};
  p.task_seen = j.value("task_seen", 0.0);
  p.best_step = j.value("best_step", std::int64_t{-1});
  p.last_progress = j.value("last_progress", 0.0);
  p.longest_interval = j.value("longest_interval", 0.0);
  p.advances = j.value("advances", 0);
  p.checkpoint_since = j.value("checkpoint_since", 0.0);
  p.checkpoint_done = j.value("checkpoint_done", 0.0);
  p.crash = j.value("crash", "");
  if (j.contains("recent") && j["recent"].is_array())
    for (const auto& line : j["recent"])
      if (line.is_string()) p.recent.push_back(line.get<std::string>());
  p.bytes_read = j.value("bytes_read", std::uint64_t{0});
  p.quick_deaths = j.value("quick_deaths", 0);
  p.counted_task = j.value("counted_task", "");
  if (j.contains("step")) p.step = j["step"].get<std::int64_t>();
  if (j.contains("max_steps")) p.max_steps = j["max_steps"].get<std::int64_t>();
  if (j.contains("step_time")) p.step_time = j["step_time"].get<double>();
  if (j.contains("loss")) p.loss = j["loss"].get<double>();
  return p;
}

void start_task(JobProgress& p, const std::string& task, const std::string& log_path, double started) {
  JobProgress fresh;
  fresh.task = task;
  fresh.log_path = log_path;
  fresh.task_seen = started;
  fresh.best_step = p.best_step;
  fresh.max_steps = p.max_steps;
  fresh.bytes_read = p.bytes_read;
  fresh.quick_deaths = p.quick_deaths;
  fresh.counted_task = p.counted_task;
  if (log_path == p.log_path) fresh.cursors = p.cursors;
  p = std::move(fresh);
}

std::vector<std::pair<std::int64_t, double>> apply_lines(JobProgress& p, const std::vector<std::string>& lines,
                                                         const TrainingLogParser& parser, double now) {
  std::vector<std::pair<std::int64_t, double>> advances;
  // Lines arrive in batches, one per cycle: the time between progress observations is
  // quantized by the cycle interval. The step interval is that time divided by the steps it
  // covered, so a 0.5 s step watched every 5 s counts as 0.5 s, not 5 s.
  const std::optional<std::int64_t> step_before = p.step;
  const double progress_before = p.last_progress;
  for (const auto& raw : lines) {
    if (trim(raw).empty()) continue;
    LogLine line = parser.parse(raw);
    p.recent.push_back(sanitize_line(raw, 300));
    if (p.recent.size() > kRecentLines) p.recent.pop_front();
    if (line.checkpoint_start) p.checkpoint_since = now;
    if (line.checkpoint_end) {
      p.checkpoint_since = 0;
      p.checkpoint_done = now;
    }
    if (!line.crash.empty() && p.crash.empty()) p.crash = line.crash;
    if (line.max_steps) p.max_steps = line.max_steps;
    if (!line.step) continue;
    if (line.step_time) p.step_time = line.step_time;
    if (line.loss) p.loss = line.loss;
    if (p.step && *line.step <= *p.step) continue;  // a repeated or older step is not progress
    if (p.step) ++p.advances;
    p.step = line.step;
    p.quick_deaths = 0;  // progress ends any crash loop
    p.best_step = std::max(p.best_step, *line.step);
    p.last_progress = now;
    p.checkpoint_since = 0;  // a step after a save means the save is over
    advances.emplace_back(*line.step, now);
  }
  if (step_before && p.step && *p.step > *step_before && progress_before > 0 && p.advances > kWarmupAdvances) {
    double per_step = (now - progress_before) / static_cast<double>(*p.step - *step_before);
    p.longest_interval = std::max(p.longest_interval, per_step);
  }
  return advances;
}

void task_ended(JobProgress& p) {
  if (p.task.empty() || p.counted_task == p.task) return;
  p.counted_task = p.task;
  if (!p.step) ++p.quick_deaths;
}

StaleVerdict evaluate_stale(const JobProgress& p, const JobSettings& job, double now) {
  StaleVerdict v;
  if (!p.step) {
    v.phase = "startup";
    v.idle = now - p.task_seen;
    v.allowance = static_cast<double>(job.startup_grace.count());
  } else {
    v.phase = "training";
    // After a save the next step is due one step interval after the save, not after the
    // step before it.
    v.idle = now - std::max(p.last_progress, p.checkpoint_done);
    if (job.stale_after) {
      v.allowance = static_cast<double>(job.stale_after->count());
    } else {
      double adaptive = job.stale_factor * p.longest_interval;
      v.allowance = std::clamp(adaptive, static_cast<double>(job.stale_floor.count()),
                               static_cast<double>(job.stale_ceiling.count()));
    }
    if (p.checkpoint_since > 0) {
      v.phase = "checkpoint";
      // A save gets its own grace, counted from when it began.
      v.allowance = std::max(v.allowance, p.checkpoint_since - p.last_progress + job.checkpoint_grace.count());
    }
  }
  v.hung = v.idle > v.allowance;
  return v;
}

}  // namespace llmwatch
