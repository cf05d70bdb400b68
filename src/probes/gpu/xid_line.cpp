#include "probes/gpu/xid_line.h"

#include <regex>

#include "probes/gpu/gpu_record.h"
#include "util/regex_window.h"
#include "util/strings.h"

namespace llmwatch {

std::optional<XidEvent> parse_xid_line(std::string_view view) {
  auto at = view.find("NVRM: Xid");
  if (at == std::string_view::npos) return std::nullopt;
  static const std::regex body(R"(^NVRM: Xid \(([^)]*)\): (\d+)(?:, (.*))?$)");
  std::string rest(regex_window(view.substr(at)));
  while (!rest.empty() && (rest.back() == '\r' || rest.back() == '\n')) rest.pop_back();
  std::smatch m;
  if (!std::regex_match(rest, m, body)) return std::nullopt;
  XidEvent e;
  e.line = sanitize_line(view, 600);
  try {
    e.xid = std::stoi(m[2]);
  } catch (const std::exception&) {
    return std::nullopt;  // absurd number: not an Xid line we understand
  }
  e.bus_id = normalize_bus_id(m[1]);
  std::string text = m[3];
  // pid=1896, name=python, ...  /  pid='<unknown>', name=<unknown>, ...  /  old: no pid at all.
  static const std::regex pid_name(R"(^pid=([^,]*), name=([^,]*), (.*)$)");
  static const std::regex pid_only(R"(^pid=([^,]*), (.*)$)");
  std::smatch p;
  auto known = [](std::string v) {
    if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
    return v == "<unknown>" ? std::string() : v;
  };
  if (std::regex_match(text, p, pid_name)) {
    e.pid = known(p[1]);
    e.process = known(p[2]);
    text = p[3];
  } else if (std::regex_match(text, p, pid_only)) {
    e.pid = known(p[1]);
    text = p[2];
  }
  e.text = sanitize_line(text);
  if (e.xid == 154) {
    static const std::regex changed(R"(to 0x([0-9a-fA-F]+) \(([^)]*)\))");
    if (std::regex_search(text, p, changed)) {
      if (auto code = to_int64(p[1].str(), 16); code && *code < 1000)
        e.new_recovery_code = static_cast<int>(*code);
      e.new_recovery_action = p[2];
    }
  }
  // The prefix, by form: /dev/kmsg record, bracketed dmesg time, or syslog header.
  // A prefix too long to be a timestamp and a host is no header we can read (see regex_window).
  std::string prefix(at <= kRegexWindow ? view.substr(0, at) : std::string_view());
  static const std::regex kmsg(R"(^(\d+),(\d+),(\d+),[^;]*;$)");
  static const std::regex bracket(R"(^\[([^\]]+)\]\s*$)");
  // Classic (Aug 17 06:18:01) or ISO 8601 (rsyslog's high-precision) timestamps.
  static const std::regex syslog(
      R"(^(\w{3} +\d+ [\d:]+|\d{4}-\d\d-\d\dT\S+) \S+ (\S+?)(?:\[\d+\])?: (?:\[[^\]]*\] )?$)");
  if (std::regex_match(prefix, p, kmsg)) {
    // The first field is facility × 8 + level: the kernel's facility is 0.
    e.from_kernel = to_int64(p[1].str()).value_or(8) < 8;
    e.kmsg_seq = to_int64(p[2].str());
    e.when = p[3].str() + "us";  // microseconds since boot
  } else if (std::regex_match(prefix, p, bracket)) {
    e.from_kernel = true;  // dmesg --kernel
    e.when = std::string(trim(p[1].str()));
  } else if (std::regex_match(prefix, p, syslog)) {
    e.from_kernel = p[2].str() == "kernel";
    e.when = std::string(trim(p[1].str()));
  } else {
    e.when = std::string(trim(prefix));
  }
  return e;
}

}  // namespace llmwatch
