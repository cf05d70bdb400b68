#pragma once
// A share of wall time for work that waits on other machines (srun node-checks, stack dumps):
// one budget per cycle, fitted inside the cycle's deadline and shared by every caller. A call
// asks for the time it wants and gets at most what is left; when too little is left it gets
// none, and the caller reports its work as unknown this cycle (it continues in the next). Two
// hung nvidia-smi calls can then no longer push a cycle past its deadline.
#include <chrono>
#include <optional>

#include "util/units.h"

namespace llmwatch {

class TimeBudget {
 public:
  // No grant shorter than this: a node-check or a dump cut to a second only fails.
  static constexpr Seconds kLeast{5};

  TimeBudget() = default;  // unlimited
  explicit TimeBudget(std::chrono::milliseconds total)
      : until_(std::chrono::steady_clock::now() + total) {}

  // The time a call may take: `want`, or what is left when that is less; none when less than
  // `least` is left.
  std::optional<Seconds> grant(Seconds want, Seconds least = kLeast) const {
    if (!until_) return want;
    auto left = std::chrono::duration_cast<Seconds>(*until_ - std::chrono::steady_clock::now());
    if (left < least || left.count() <= 0) return std::nullopt;
    return std::min(want, left);
  }

 private:
  std::optional<std::chrono::steady_clock::time_point> until_;
};

}  // namespace llmwatch
