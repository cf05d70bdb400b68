#pragma once
// Can the wall clock measure idle time this cycle? Idle time is "now minus the last
// progress", two wall-clock readings kept in the store across restarts of llmwatch. An NTP
// step, or a self-job that runs on another node whose clock is off, would make a healthy run
// look idle (or a hung one busy). Each cycle keeps a ClockReading; the next compares:
// - same host and boot: the wall clock moved more than CLOCK_BOOTTIME (monotonic, counts
//   suspend) by over kClockTolerance: a jump. Remembered times are shifted by it, so idle
//   time is in effect measured on the monotonic clock. A gap between cycles longer than
//   max(3 × interval, kClockMinGap) is also reported;
// - another host or boot: a gap longer than interval + max(interval, kClockMinGap) cannot be
//   told from a clock offset; the time llmwatch did not watch is not counted as idle time.
// Whenever the clock is not trusted, the hang rule is `unknown` for that cycle. Pure.
#include <string>

namespace llmwatch {

inline constexpr double kClockTolerance = 30;  // seconds of disagreement that are noise
inline constexpr double kClockMinGap = 120;

struct ClockReading {
  std::string host, boot_id;
  double wall = 0, boot = 0;
  std::string to_json() const;
  static bool from_json(const std::string& text, ClockReading* out);
};

struct ClockVerdict {
  bool trusted = true;
  double shift = 0;  // seconds to add to remembered wall-clock readings
  std::string why;   // when not trusted
};

ClockVerdict judge_clock(const ClockReading* previous, const ClockReading& now,
                         double interval_seconds);

}  // namespace llmwatch
