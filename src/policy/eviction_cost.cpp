#include "policy/eviction_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/units.h"

namespace llmwatch {
namespace {

std::string about(double seconds) {
  return format_seconds(std::max(0.0, seconds));
}

bool known(double v) {
  return std::isfinite(v) && v >= 0;
}

}  // namespace

EvictionVerdict judge_eviction(const EvictionCase& c) {
  EvictionVerdict v;
  if (!(c.speed > 0 && c.speed < 1)) {
    v.text = "keep: the run is not slower than its healthy pace";
    return v;
  }
  if (!known(c.remaining_s) || !known(c.restart_s) || !known(c.save_s) || !known(c.lost_work_s)) {
    v.text = !known(c.remaining_s) ? "keep: the run's remaining time is unknown (no max_steps)"
                                   : "keep: the cost of a restart is not known yet";
    return v;
  }
  // At `speed` the remaining work takes remaining/speed; off the slow node, remaining.
  v.saving_s = c.remaining_s * (1 / c.speed - 1);
  v.cost_s = c.save_s + c.restart_s + c.lost_work_s;
  v.evict = v.saving_s > v.cost_s * (1 + std::max(0.0, c.margin));
  char pace[16];
  std::snprintf(pace, sizeof pace, "%.2f", c.speed);
  v.text = std::string(v.evict ? "evict" : "keep") + ": saves ≈ " + about(v.saving_s) + " of " +
           about(c.remaining_s / c.speed) + " remaining at " + pace + "×; restart costs ≈ " +
           about(v.cost_s);
  return v;
}

}  // namespace llmwatch
