#pragma once
// Whether evicting a slow node pays (#28). Staying costs the slowdown over the time the run
// has left; leaving costs a save, the time from cancel to the new run's first step, and the
// work since the last checkpoint. Evict only when the saving beats the cost by a margin, and
// never on a figure that is not known. Pure.
#include <string>

namespace llmwatch {

struct EvictionCase {
  double speed = 1;  // the run's pace now against its healthy pace (the slow node's)
  double remaining_s =
      -1;                 // work left at the healthy pace, within the task's time limit; <0 unknown
  double save_s = 0;      // the save before the cancel (0 without a save switch)
  double restart_s = -1;  // cancel to the new run's first step, as measured; <0 unknown
  double lost_work_s = 0;  // work since the last checkpoint that a restart redoes
  double margin = 0.5;     // the saving must exceed the cost × (1 + margin)
};

struct EvictionVerdict {
  bool evict = false;
  double saving_s = 0, cost_s = 0;
  // "evict: saves ≈ 3h6m of 4h remaining at 0.71×; restart costs ≈ 9m", or why not.
  std::string text;
};

EvictionVerdict judge_eviction(const EvictionCase& c);

}  // namespace llmwatch
