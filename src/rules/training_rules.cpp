#include "rules/training_rules.h"

#include <algorithm>
#include <cstdio>

#include "util/robust_stats.h"

namespace llmwatch {

namespace {
constexpr size_t kMinBaseline = 10;  // samples before a baseline means anything

std::string num(double v, const char* fmt = "%.3g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}
}  // namespace

std::vector<Finding> evaluate_training(const JobSettings& job, const std::string& label,
                                       const JobProgress& p) {
  std::vector<Finding> out;
  auto make = [&](const std::string& kind, Severity sev, std::string summary) {
    Finding f = make_finding("job:" + label, label, kind, sev, std::move(summary));
    f.evidence.assign(p.recent.begin(), p.recent.end());
    return f;
  };

  // Slowdown: the last N step times all above the median of those before them.
  size_t n = static_cast<size_t>(std::max(1, job.slowdown_steps));
  if (p.step_times.size() >= kMinBaseline + n) {
    std::vector<double> before(p.step_times.begin(), p.step_times.end() - static_cast<long>(n));
    double base = median(before);
    double limit = base * (1 + job.slowdown_percent);
    bool all_slow = std::all_of(p.step_times.end() - static_cast<long>(n), p.step_times.end(),
                                [limit](double t) { return t > limit; });
    if (base > 0 && all_slow) {
      double latest = p.step_times.back();
      out.push_back(make("slowdown", Severity::Warning,
                         "step time " + num(latest) + " s is " +
                             num((latest / base - 1) * 100, "%.0f") + "% above this run's median " +
                             num(base) + " s for the last " + std::to_string(n) +
                             " steps (a slow GPU, throttling or a bad link slows every rank)"));
    }
  }

  // Loss spike: the latest loss above the moving median of the ones before it.
  if (p.losses.size() > kMinBaseline) {
    std::vector<double> before(p.losses.begin(), p.losses.end() - 1);
    double base = median(before);
    double latest = p.losses.back();
    if (base > 0 && latest > base * job.loss_spike_factor)
      out.push_back(make("loss-spike", Severity::Warning,
                         "loss " + num(latest) + " is " + num(latest / base, "%.2f") +
                             "x its moving median " + num(base)));
  }

  if (p.nan_loss)
    out.push_back(make("nan-loss", Severity::Critical, "the loss is NaN or inf in task " + p.task));
  if (p.counters_rising)
    out.push_back(make("bad-iterations", Severity::Warning,
                       "skipped/NaN iteration counters are rising (skipped " +
                           std::to_string(p.skipped_iterations.value_or(0)) + ", NaN " +
                           std::to_string(p.nan_iterations.value_or(0)) + ")"));
  if (p.samples_stalled >= 3)
    out.push_back(make(
        "samples-stalled", Severity::Warning,
        "consumed samples stopped at " + num(p.consumed_samples.value_or(0), "%.0f") + " for " +
            std::to_string(p.samples_stalled) + " steps while the step counter advances"));
  return out;
}

}  // namespace llmwatch
