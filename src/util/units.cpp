#include "util/units.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

#include "util/strings.h"

namespace llmwatch {
namespace {

// Reads a non-negative decimal number (digits with an optional fraction) at text[pos].
bool read_number(std::string_view text, size_t& pos, double& value) {
  size_t start = pos;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.'))
    ++pos;
  if (pos == start) return false;
  std::string digits(text.substr(start, pos - start));
  if (digits.find('.') != digits.rfind('.') || digits == ".") return false;
  try {
    value = std::stod(digits);
  } catch (const std::out_of_range&) {
    return false;  // 400 digits: not a quantity anyone meant
  }
  return true;
}

}  // namespace

Result<Seconds> parse_duration(std::string_view text) {
  text = trim(text);
  if (text.empty()) return Error{"empty duration"};
  double total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    double value = 0;
    if (!read_number(text, pos, value))
      return Error{"expected a number in duration '" + std::string(text) + "'"};
    while (pos < text.size() && text[pos] == ' ') ++pos;
    size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    while (pos < text.size() && text[pos] == ' ') ++pos;
    auto is = [&unit](std::initializer_list<std::string_view> names) {
      for (auto n : names)
        if (unit == n) return true;
      return false;
    };
    double scale;
    if (is({"s", "sec", "secs", "second", "seconds"}))
      scale = 1;
    else if (is({"ms"}))
      scale = 0.001;
    else if (is({"m", "min", "mins", "minute", "minutes"}))
      scale = 60;
    else if (is({"h", "hr", "hrs", "hour", "hours"}))
      scale = 3600;
    else if (is({"d", "day", "days"}))
      scale = 86400;
    else if (is({"w", "week", "weeks"}))
      scale = 7 * 86400;
    else if (unit.empty() && pos == text.size() && total == 0 && value == 0)
      scale = 1;  // "0" is zero in any unit
    else if (unit.empty() && pos == text.size() && total == 0)
      return Error{"duration '" + std::string(text) + "' needs a unit: '" + std::string(text) +
                   "s', '" + std::string(text) + "m' or '" + std::string(text) + "h'"};
    else
      return Error{"unknown unit '" + std::string(unit) + "' in duration '" + std::string(text) +
                   "' (use ms, s, m, h, d, w)"};
    total += value * scale;
  }
  if (total > 1e9) return Error{"duration '" + std::string(text) + "' is too long"};
  return Seconds(static_cast<std::int64_t>(std::llround(total)));
}

Result<std::uint64_t> parse_size(std::string_view text) {
  text = trim(text);
  size_t pos = 0;
  double value = 0;
  if (!read_number(text, pos, value))
    return Error{"expected a number in size '" + std::string(text) + "'"};
  std::string unit(trim(text.substr(pos)));
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const char* kPrefixes = "KMGTPE";
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  for (int i = 0; i < 6 && scale == 0; ++i) {
    std::string p(1, kPrefixes[i]);
    if (unit == p + "IB" || unit == p + "I")
      scale = std::pow(1024.0, i + 1);
    else if (unit == p + "B" || unit == p)
      scale = std::pow(1000.0, i + 1);
  }
  if (scale == 0)
    return Error{"unknown unit '" + unit + "' in size '" + std::string(text) +
                 "' (use B, KB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, PiB)"};
  double bytes = value * scale;
  if (bytes >= 1.8e19) return Error{"size '" + std::string(text) + "' is too large"};
  return static_cast<std::uint64_t>(std::llround(bytes));
}

Result<double> parse_percent(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.back() == '%') text.remove_suffix(1);
  size_t pos = 0;
  double value = 0;
  if (!read_number(text, pos, value) || pos != text.size())
    return Error{"expected a percentage like '85%', got '" + std::string(text) + "'"};
  if (value > 100) return Error{"percentage " + std::string(text) + "% is over 100%"};
  return value / 100.0;
}

std::string format_seconds(double seconds) {
  return format_duration(Seconds(static_cast<long long>(std::llround(seconds))));
}

std::string format_duration(Seconds d) {
  auto s = d.count();
  if (s < 0) return "-" + format_duration(Seconds(-s));
  if (s == 0) return "0s";
  std::string out;
  const std::pair<std::int64_t, const char*> units[] = {
      {86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  int parts = 0;
  for (auto [size, name] : units) {
    if (s >= size && parts < 2) {
      out += std::to_string(s / size) + name;
      s %= size;
      ++parts;
    } else if (parts > 0) {
      ++parts;  // keep at most two adjacent units: "1d2h", never "1d0h5m3s"
    }
  }
  return out;
}

std::string format_whole(double v) {
  char buf[512];  // %.0f of DBL_MAX is 309 digits
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string format_size(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) value /= 1024, ++unit;
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return buf;
}

std::string format_utc(double unix_time) {
  char buf[32] = "?";
  std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  if (gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace llmwatch
