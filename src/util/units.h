#pragma once
// Human-friendly quantities in config and on the command line: durations ("90s", "15m",
// "2h", "1d", "1h30m"), sizes ("500GiB", "5TB", "1024"), percentages ("85%").
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace llmwatch {

using Seconds = std::chrono::seconds;

// Each parser fails with a short reason when the text is malformed.
Result<Seconds> parse_duration(std::string_view text);
Result<std::uint64_t> parse_size(std::string_view text);
// "85%" or "85" → 0.85; rejects values outside 0..100.
Result<double> parse_percent(std::string_view text);

// "1h30m", "45s", "2d3h": the inverse of parse_duration, for status output.
std::string format_duration(Seconds d);
// The same for a figure in seconds, rounded to the nearest whole second.
std::string format_seconds(double seconds);
// "1.5 GiB": binary units, one decimal.
std::string format_size(std::uint64_t bytes);
// "1095": a figure rounded to a whole number, for any double ("%.0f": a cast or llround of a
// value out of range is undefined or unspecified, and figures come from other programs).
std::string format_whole(double v);
// "2026-11-22T21:11:42Z": a Unix time as RFC 3339 in UTC, whole seconds ("?" if unrepresentable).
std::string format_utc(double unix_time);

// The wall clock, in seconds since the epoch.
double unix_now();

}  // namespace llmwatch
