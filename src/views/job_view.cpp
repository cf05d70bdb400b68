#include "views/job_view.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "rules/end_cause.h"
#include "rules/job_rules.h"
#include "rules/post_mortem.h"
#include "rules/training_metrics.h"
#include "rules/training_rules.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/robust_stats.h"
#include "util/text.h"
#include "util/units.h"
#include "views/goodput_view.h"

namespace llmwatch {

nlohmann::json job_figures(const JobSettings& job, const JobProgress& p, double now) {
  nlohmann::json f = nlohmann::json::object();
  std::vector<double> recent(p.step_times.begin(), p.step_times.end());
  double step_time = !recent.empty() ? median(recent) : p.step_time.value_or(0);
  if (step_time > 0) f["step_time_s"] = step_time;
  double gbs = job.global_batch_size > 0 ? job.global_batch_size : p.global_batch_size.value_or(0);
  double tps = 0;
  if (job.seq_length > 0 && gbs > 0 && step_time > 0)
    f["tokens_per_s"] = tps = tokens_per_second(job.seq_length, gbs, step_time);
  double flops = job.model_flops_per_sample;
  if (flops <= 0 && job.layers > 0 && job.seq_length > 0) {
    ModelArchitecture a{job.layers,       job.hidden_size, job.ffn_hidden_size, job.attention_heads,
                        job.query_groups, job.vocab_size,  job.seq_length,      job.gated_mlp};
    flops = model_flops_per_sample(a);
  }
  if (flops > 0) f["model_flops_per_sample"] = flops;
  double peak =
      job.peak_tflops > 0 ? job.peak_tflops : peak_tflops(job.gpu, job.precision).value_or(0);
  if (flops > 0 && gbs > 0 && step_time > 0 && job.gpus > 0 && peak > 0)
    f["mfu"] = mfu(gbs, flops, step_time, job.gpus, peak);
  long long max_steps = job.max_steps > 0 ? job.max_steps : p.max_steps.value_or(0);
  if (max_steps > 0 && p.step && step_time > 0)
    // At the pace the steps are seen to come, where known: a printed step time leaves out
    // the data loading, logging and waits between steps.
    f["eta_s"] =
        eta_seconds(*p.step, max_steps, p.observed_interval > 0 ? p.observed_interval : step_time);
  if (job.train_tokens > 0 && tps > 0)
    f["time_to_train_tokens_s"] = seconds_to_train_tokens(job.train_tokens, tps);
  if (p.loss && std::isfinite(*p.loss)) f["loss"] = *p.loss;
  if (p.checkpoint_done > 0) f["last_checkpoint_age_s"] = now - p.checkpoint_done;
  if (p.save_seconds) f["save_s"] = *p.save_seconds;
  if (p.checkpoint_interval > 0) f["checkpoint_interval_s"] = p.checkpoint_interval;
  f["recent_step_times"] = p.step_times;
  return f;
}

nlohmann::json job_history(const JobSettings& job, Store& store, double now, bool series) {
  std::string label = job_label(job);
  nlohmann::json h = nlohmann::json::object();
  // Failures: hang/crash/absent findings as they were raised, runs that ended for any reason
  // but completion or a person's cancel, and restarts whose launch failed on a node.
  std::vector<FindingEvent> failures;
  for (auto& e : store.finding_events(label)) {
    bool ended = e.kind == "ended" && e.cause != end_class_name(EndClass::Completed) &&
                 e.cause != end_class_name(EndClass::Cancelled);
    if (ended || e.kind == "hung" || e.kind == "crashed" || e.kind == "absent" ||
        e.kind == "launch-failed")
      failures.push_back(std::move(e));
  }
  nlohmann::json restarts = nlohmann::json::array();
  // Lost: from the last step before a failure until the run is back at that step. That is
  // the silent time, detection, restart, and the steps redone since the checkpoint it resumed
  // from. A run not back there yet has lost all the time since (#27: a hang and a restart
  // read "lost 0s" while the new task redid its steps). Failures of one outage (a crash seen
  // while the task ran, then its end) share their time: the windows are merged.
  std::vector<std::pair<double, double>> windows;
  for (const auto& e : failures) {
    nlohmann::json r = {{"ts", e.ts}, {"reason", e.message}};
    // Read by index around each failure: a month of rows is not read for each job.
    std::optional<std::pair<double, std::int64_t>> before;
    if (e.step >= 0 && e.step_ts > 0)
      before = std::pair{e.step_ts, e.step};  // recorded with the finding, exact
    else
      before = store.progress_at(label, e.ts);
    if (before && before->first > 0) {
      auto after = store.progress_reached(label, e.ts, before->second);
      double until = after ? *after : now;
      if (!after) r["recovering"] = true;
      r["lost_s"] = std::max(0.0, until - before->first);
      windows.emplace_back(before->first, until);
    }
    restarts.push_back(r);
  }
  std::sort(windows.begin(), windows.end());
  double lost_total = 0, covered = -1;
  for (const auto& [from, to] : windows) {
    double start = std::max(from, covered);
    if (to > start) lost_total += to - start;
    covered = std::max(covered, to);
  }
  h["failures"] = restarts;
  // The goodput ledger's buckets for this run (#29): the same rows as `llmwatch goodput`.
  if (auto t = goodput_totals(GoodputLedger(store).rows(0, label)); t.allocated > 0) {
    nlohmann::json b = nlohmann::json::object();
    for (const auto& [bucket, gs] : t.buckets) b[bucket] = gs;
    h["goodput"] = {{"ettr", t.ettr()}, {"gpu_seconds", b}, {"line", goodput_line(t, "run")}};
  }
  h["restarts_done"] = store.count_actions("restart", label, 0);
  if (auto first = store.progress_first(label)) {
    double wall = now - *first;
    h["wall_s"] = wall;
    h["lost_s"] = lost_total;
    if (wall > 0) h["effective_training_ratio"] = std::clamp((wall - lost_total) / wall, 0.0, 1.0);
    if (series) {  // steps over time, thinned to at most 200 points
      auto rows = store.progress_steps(label);
      nlohmann::json steps = nlohmann::json::array();
      size_t stride = std::max<size_t>(1, rows.size() / 200);
      for (size_t i = 0; i < rows.size(); i += stride)
        steps.push_back({rows[i].first, rows[i].second});
      h["steps"] = steps;
    }
    if (!failures.empty() && wall > 0) h["mtbf_s"] = wall / static_cast<double>(failures.size());
  }
  return h;
}

std::string sparkline(const std::vector<double>& values, size_t width) {
  static const char* kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty()) return "";
  size_t start = values.size() > width ? values.size() - width : 0;
  auto [lo, hi] = std::minmax_element(values.begin() + static_cast<long>(start), values.end());
  std::string out;
  for (size_t i = start; i < values.size(); ++i) {
    int level = *hi > *lo ? static_cast<int>((values[i] - *lo) / (*hi - *lo) * 7.0 + 0.5) : 0;
    out += kBars[std::clamp(level, 0, 7)];
  }
  return out;
}

nlohmann::json build_job(const JobSettings& job, Store& store, double now) {
  std::string label = job_label(job);
  JobProgress p = store.progress(label);
  nlohmann::json j = {{"schema", "llmwatch.job/1"}, {"name", label}, {"task", p.task}};
  if (p.step) j["step"] = *p.step;
  long long max_steps = job.max_steps > 0 ? job.max_steps : p.max_steps.value_or(0);
  if (max_steps > 0) j["max_steps"] = max_steps;
  j["figures"] = job_figures(job, p, now);
  j["history"] = job_history(job, store, now);
  const auto& f = j["figures"];
  const auto& h = j["history"];
  double best =
      f.contains("save_s") && h.contains("mtbf_s")
          ? optimal_checkpoint_interval(f["save_s"].get<double>(), h["mtbf_s"].get<double>())
          : 0;
  // A save under a second gives no advice: the formula weighs the save's cost against lost
  // work, and a save that costs nothing made "checkpoint every 0s" (seen in the demo).
  if (best >= 1 && f["save_s"].get<double>() >= 1) {
    j["optimal_checkpoint_interval_s"] = best;
    std::string advice =
        "checkpoint every " + format_duration(Seconds(static_cast<long long>(best))) +
        " (Young/Daly: save " + std::to_string(static_cast<int>(f["save_s"].get<double>())) +
        " s, MTBF " + format_duration(Seconds(static_cast<long long>(h["mtbf_s"].get<double>()))) +
        ")";
    if (f.contains("checkpoint_interval_s")) {
      double current = f["checkpoint_interval_s"].get<double>();
      j["expected_loss_per_failure_s"] = current / 2;
      advice += "; now every " + format_duration(Seconds(static_cast<long long>(current))) +
                ", losing ~" + format_duration(Seconds(static_cast<long long>(current / 2))) +
                " per failure";
    }
    j["advice"] = advice;
  }
  // How the last task ended (the post-mortem) and where its ranks were when it hung.
  if (auto pm = PostMortem::from_json(store.get(kv::post_mortem(label)).value_or("")))
    j["last_end"] = nlohmann::json::parse(pm->to_json());
  if (auto st = nlohmann::json::parse(store.get(kv::stacks(label)).value_or(""), nullptr, false);
      st.is_object())
    j["stacks"] = st;
  return j;
}

namespace {
std::string fmt(double v, const char* f) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string dur(double s) {
  return format_duration(Seconds(static_cast<long long>(s)));
}
}  // namespace

std::string render_job(const nlohmann::json& j, bool color) {
  std::ostringstream out;
  const auto& f = j["figures"];
  const auto& h = j["history"];
  out << j["name"].get<std::string>() << "  task " << j.value("task", "") << "  step "
      << j.value("step", 0LL);
  if (j.contains("max_steps")) out << "/" << j["max_steps"].get<long long>();
  out << "\n";
  if (f.contains("step_time_s")) {
    out << "  step time      " << fmt(f["step_time_s"].get<double>(), "%.2f s");
    std::vector<double> recent;
    for (const auto& v : f["recent_step_times"]) recent.push_back(v.get<double>());
    if (color && !recent.empty()) out << "  " << sparkline(recent);
    out << "\n";
  }
  if (f.contains("tokens_per_s"))
    out << "  throughput     " << fmt(f["tokens_per_s"].get<double>(), "%.0f tokens/s") << "\n";
  if (f.contains("mfu"))
    out << "  MFU            " << fmt(f["mfu"].get<double>() * 100, "%.2f%%") << "\n";
  if (f.contains("loss"))
    out << "  loss           " << fmt(f["loss"].get<double>(), "%.4g") << "\n";
  if (f.contains("eta_s")) out << "  ETA            " << dur(f["eta_s"].get<double>()) << "\n";
  if (f.contains("time_to_train_tokens_s"))
    out << "  to train target tokens  "
        << fmt(f["time_to_train_tokens_s"].get<double>() / 86400, "%.2f days") << "\n";
  if (f.contains("last_checkpoint_age_s")) {
    out << "  last checkpoint " << dur(f["last_checkpoint_age_s"].get<double>()) << " ago";
    if (f.contains("save_s"))
      out << " (save took " << fmt(f["save_s"].get<double>(), "%.1f s") << ")";
    out << "\n";
  }
  if (j.contains("advice")) out << "  advice         " << j["advice"].get<std::string>() << "\n";
  if (h.contains("goodput")) out << "  " << h["goodput"]["line"].get<std::string>() << "\n";
  // One ETTR on the page: with the ledger's (which also counts startup and queue time, as
  // `llmwatch goodput` does), the time since the first step is shown as what failures cost,
  // not as a second, different percentage.
  if (h.contains("goodput") && h.contains("lost_s"))
    out << "  lost to failures " << dur(h["lost_s"].get<double>()) << " of "
        << dur(h["wall_s"].get<double>())
        << " since the first step (silence, restart, steps redone)\n";
  else if (h.contains("effective_training_ratio"))
    out << "  effective training time "
        << fmt(h["effective_training_ratio"].get<double>() * 100, "%.1f%%") << " of "
        << dur(h["wall_s"].get<double>()) << " (lost " << dur(h["lost_s"].get<double>()) << ")\n";
  out << "  failures       " << h["failures"].size() << ", restarts " << h.value("restarts_done", 0)
      << "\n";
  for (const auto& r : h["failures"]) {
    out << "    - " << r["reason"].get<std::string>();
    if (r.contains("lost_s")) out << " (lost " << dur(r["lost_s"].get<double>()) << ")";
    out << "\n";
  }
  if (j.contains("last_end")) {
    const auto& e = j["last_end"];
    out << "  last end       " << terminal_safe(e.value("summary", "")) << "\n";
    for (const auto& s : e.value("suspects", nlohmann::json::array()))
      out << "    suspect " << terminal_safe(s.value("node", "")) << " "
          << fmt(s.value("confidence", 0.0), "%.2f") << ": "
          << terminal_safe(s.value("why", std::vector<std::string>{}).empty()
                               ? ""
                               : s["why"][0].get<std::string>())
          << "\n";
    for (const auto& line : e.value("evidence", std::vector<std::string>{}))
      out << "    " << terminal_safe(line) << "\n";
  }
  if (j.contains("stacks"))
    out << "  stacks         " << terminal_safe(j["stacks"].value("summary", "")) << " ("
        << terminal_safe(j["stacks"].value("file", "")) << ")\n";
  return out.str();
}

}  // namespace llmwatch
