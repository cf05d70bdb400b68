#include "rules/clock_rule.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/text.h"
#include "util/units.h"

namespace llmwatch {
namespace {

std::string signed_duration(double seconds) {
  return (seconds < 0 ? "-" : "+") +
         format_duration(Seconds(static_cast<long long>(std::fabs(seconds))));
}

}  // namespace

std::string ClockReading::to_json() const {
  return json_dump({{"host", host}, {"boot_id", boot_id}, {"wall", wall}, {"boot", boot}});
}

bool ClockReading::from_json(const std::string& text, ClockReading* out) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("wall") || !j["wall"].is_number()) return false;
  out->host = j.value("host", "");
  out->boot_id = j.value("boot_id", "");
  out->wall = j["wall"].get<double>();
  out->boot = j.contains("boot") && j["boot"].is_number() ? j["boot"].get<double>() : 0;
  return true;
}

ClockVerdict judge_clock(const ClockReading* previous, const ClockReading& now,
                         double interval_seconds) {
  ClockVerdict v;
  if (!previous) return v;
  double wall_delta = now.wall - previous->wall;
  double abnormal = std::max(3 * interval_seconds, kClockMinGap);
  bool same_boot = !now.boot_id.empty() && previous->host == now.host &&
                   previous->boot_id == now.boot_id && previous->boot > 0;
  if (same_boot) {
    double elapsed = now.boot - previous->boot;
    double jump = wall_delta - elapsed;
    if (std::fabs(jump) > kClockTolerance) {
      v.trusted = false;
      v.shift = jump;
      v.why = "the host clock jumped " + signed_duration(jump) + " since the last cycle";
    } else if (elapsed > abnormal) {
      v.trusted = false;
      v.why = "the last cycle was " + signed_duration(elapsed) + " ago";
    }
    return v;
  }
  // Without a shared monotonic clock, anything well beyond one interval may be an offset.
  if (wall_delta > interval_seconds + std::max(interval_seconds, kClockMinGap) ||
      wall_delta < -kClockTolerance) {
    v.trusted = false;
    v.shift = wall_delta - interval_seconds;
    v.why = "the last cycle ran on " + (previous->host.empty() ? "?" : previous->host) + " " +
            signed_duration(wall_delta) + " ago by this host's clock: a gap or another clock";
  }
  return v;
}

}  // namespace llmwatch
