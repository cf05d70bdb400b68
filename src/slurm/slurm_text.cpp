#include "slurm/slurm_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <unordered_map>

#include "slurm/hostlist.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

// The lines of a command's output as views into it (no copy per line), numbered from 1, with
// a '\r' before the '\n' taken off.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (start_ >= text_.size()) return false;
    size_t end = text_.find('\n', start_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(start_, end - start_);
    start_ = end + 1;
    ++number_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
  }
  int number() const { return number_; }

 private:
  std::string_view text_;
  size_t start_ = 0;
  int number_ = 0;
};

// Splits a line into views at '|' (no copy per field).
void split_views(std::string_view line, std::vector<std::string_view>& f) {
  f.clear();
  for (size_t at = 0;;) {
    size_t bar = line.find('|', at);
    f.push_back(line.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at));
    if (bar == std::string_view::npos) return;
    at = bar + 1;
  }
}

}  // namespace

// %l: "UNLIMITED", "D-HH[:MM[:SS]]", "HH:MM:SS", "MM:SS" or "MM"; 0 when none or unreadable.
std::int64_t slurm_minutes(std::string_view text) {
  std::int64_t days = 0;
  auto dash = text.find('-');
  if (dash != std::string_view::npos) {
    days = to_int64(text.substr(0, dash)).value_or(-1);
    text = text.substr(dash + 1);
  }
  std::vector<std::int64_t> parts;
  for (const auto& p : split(std::string(text), ':')) {
    auto n = to_int64(p);
    if (!n || *n < 0) return 0;  // UNLIMITED, NOT_SET, garbage
    parts.push_back(*n);
  }
  if (days < 0 || parts.empty() || parts.size() > 3) return 0;
  // Beyond any real limit (a thousand years): garbage, and its minutes would overflow.
  constexpr std::int64_t kMost = 1'000 * 366 * 1440;
  if (days > kMost / 1440) return 0;
  for (auto p : parts)
    if (p > kMost) return 0;
  std::int64_t h = 0, m = 0, sec = 0;
  if (dash != std::string_view::npos)  // "D-HH[:MM[:SS]]": hours come first after the day
    h = parts[0], m = parts.size() > 1 ? parts[1] : 0, sec = parts.size() > 2 ? parts[2] : 0;
  else if (parts.size() == 3)
    h = parts[0], m = parts[1], sec = parts[2];
  else if (parts.size() == 2)
    m = parts[0], sec = parts[1];
  else
    m = parts[0];
  return days * 1440 + h * 60 + m + (sec > 0 ? 1 : 0);
}

// %S: local time "2026-11-22T01:36:25" (squeue prints the controller's local time, like
// scontrol), or unix seconds (SLURM_TIME_FORMAT=%s, as sacct is asked); 0 for "N/A",
// "Unknown" or garbage.
std::int64_t slurm_timestamp(std::string_view text) {
  std::int64_t unix_seconds = 0;
  auto [last, ec] = std::from_chars(text.data(), text.data() + text.size(), unix_seconds);
  if (ec == std::errc() && last == text.data() + text.size())
    return std::max<std::int64_t>(0, unix_seconds);
  std::tm tm{};
  std::string s(text);
  if (!strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  // mktime consults the time zone on every call (glibc stats /etc/localtime each time when TZ
  // is unset): 100,000 start times cost 25 ms per cycle. Within one hour of local time the
  // offset is one (zones change it on the hour), so the hour's start is converted once and
  // the minutes and seconds are added. The answer is kept a minute at most: the host's time
  // zone may be changed under a running daemon.
  thread_local int cached_hour_key = -1;
  thread_local std::time_t cached_hour_start = -1;
  thread_local auto cached_at = std::chrono::steady_clock::time_point{};
  int minutes = tm.tm_min, seconds = tm.tm_sec;
  int hour_key = ((tm.tm_year * 13 + tm.tm_mon) * 32 + tm.tm_mday) * 24 + tm.tm_hour;
  auto now = std::chrono::steady_clock::now();
  if (hour_key != cached_hour_key || now - cached_at > std::chrono::minutes(1)) {
    cached_at = now;
    tm.tm_min = 0;
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    cached_hour_start = std::mktime(&tm);
    cached_hour_key = hour_key;
  }
  if (cached_hour_start < 0) return 0;
  return static_cast<std::int64_t>(cached_hour_start) + minutes * 60 + seconds;
}

SqueueParse parse_squeue_text(std::string_view text, const JobFilter* filter) {
  SqueueParse out;
  std::vector<std::string_view> f;
  // Views into the text, no copy per line: 100,000 lines are parsed every cycle.
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    const int line_no = lines.number();
    if (trim(line).empty()) continue;
    if (filter) {
      // Cheap look at the name (between the 4th '|' and the 6th from the end) and the ids
      // first: most lines of a big queue are not ours.
      // memchr and memrchr: a byte-at-a-time scan of 100,000 lines was most of the parse.
      size_t a = std::string_view::npos, b = line.size();
      const char* at = line.data();
      const char* end = line.data() + line.size();
      for (int bars = 0; at && bars < 4; ++bars) {
        at = static_cast<const char*>(std::memchr(at, '|', static_cast<size_t>(end - at)));
        if (at) ++at;
      }
      if (at) a = static_cast<size_t>(at - line.data());
      for (int k = 0; k < 6 && b != std::string_view::npos; ++k) {
        const void* bar = b > 0 ? memrchr(line.data(), '|', b) : nullptr;
        b = bar ? static_cast<size_t>(static_cast<const char*>(bar) - line.data())
                : std::string_view::npos;
      }
      if (a != std::string_view::npos && b != std::string_view::npos && b >= a) {
        std::string_view name = line.substr(a, b - a);
        std::string_view id = line.substr(line.find('|') + 1);
        id = id.substr(0, id.find('|'));
        std::string_view display = line.substr(0, line.find('|'));
        std::int64_t job_id = 0, array_id = 0;
        auto parsed = std::from_chars(id.data(), id.data() + id.size(), job_id);
        bool well_formed = parsed.ec == std::errc() && parsed.ptr == id.data() + id.size();
        if (auto u = display.find('_'); u != std::string_view::npos)
          std::from_chars(display.data(), display.data() + u, array_id);
        // A malformed line is never skipped here: the full parse below reports it.
        if (well_formed && !filter->wants(name, job_id, array_id)) continue;
      }
    }
    split_views(line, f);
    if (f.size() < 11) {
      out.error = "line " + std::to_string(line_no) + ": expected 11 '|'-separated fields, got " +
                  std::to_string(f.size());
      return out;
    }
    // A job name may itself hold '|': everything between user-visible fields 4 and the last 6.
    std::string name(f[4]);
    for (size_t i = 5; i + 6 < f.size(); ++i) name += "|" + std::string(f[i]);
    size_t t = f.size() - 6;  // index of %u
    SlurmJob j;
    auto job_id = to_int64(f[1]);
    if (!job_id || *job_id < 0) {
      out.error = "line " + std::to_string(line_no) + ": job id '" + sanitize_line(f[1], 40) +
                  "' is not a number";
      return out;
    }
    j.job_id = *job_id;
    std::string display(f[0]);
    size_t underscore = display.find('_');
    if (underscore != std::string::npos)
      j.array_job_id = to_int64(std::string_view(display).substr(0, underscore)).value_or(0);
    if (j.array_job_id) {
      std::string task(f[2]);
      if (auto n = to_int64(task))
        j.array_task_id = *n;
      else
        j.array_task_string = task;
      size_t pct = task.find('%');
      if (pct != std::string::npos) j.array_max_tasks = std::atoi(task.c_str() + pct + 1);
    }
    j.state = f[3];
    j.name = name;
    j.user = f[t];
    j.nodes = f[t + 1];
    j.reason = f[t + 2];
    j.time_limit_minutes = slurm_minutes(f[t + 4]);
    j.start_time = slurm_timestamp(f[t + 5]);
    if (auto hosts = expand_hostlist(j.nodes); hosts && !hosts->empty()) {
      j.batch_host = hosts->front();
      j.node_count = static_cast<int>(hosts->size());
    }
    out.jobs.push_back(std::move(j));
  }
  return out;
}

namespace {

// sinfo's state word as Slurm's JSON spells it, with its suffix flags: "drng*" is allocated
// with DRAIN and NOT_RESPONDING.
void read_node_state(std::string_view word, std::string& state, std::vector<std::string>& flags) {
  // Suffixes: '*' not responding, '~' powered off, '#' powering up, '!' pending power down...
  while (!word.empty() && std::string_view("*~#!%$@^-").find(word.back()) != std::string::npos) {
    if (word.back() == '*') flags.push_back("NOT_RESPONDING");
    word.remove_suffix(1);
  }
  state.assign(word);
  std::transform(state.begin(), state.end(), state.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (state == "drain" || state == "drained" || state == "draining" || state == "drng") {
    flags.push_back("DRAIN");
    state = state == "draining" || state == "drng" ? "allocated" : "idle";
  } else if (state == "alloc") {
    state = "allocated";
  } else if (state == "mix") {
    state = "mixed";
  }
}
}  // namespace

// Views into the text, no copy per line or field: 16,384 nodes are parsed every cycle.
SinfoParse parse_sinfo_text(std::string_view text) {
  SinfoParse out;
  int name_col = -1, state_col = -1, reason_col = -1, partition_col = -1, address_col = -1;
  std::unordered_map<std::string, size_t> position;  // node → index in out.nodes
  std::vector<std::string_view> f;
  std::string state;
  std::vector<std::string> flags;
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    const int line_no = lines.number();
    split_views(line, f);
    if (line_no == 1) {  // the header
      for (int i = 0; i < static_cast<int>(f.size()); ++i) {
        std::string_view h = trim(f[i]);
        if (name_col < 0 && (h == "NODELIST" || h == "HOSTNAMES")) name_col = i;
        if (state_col < 0 && h == "STATE") state_col = i;
        if (reason_col < 0 && h == "REASON") reason_col = i;
        if (partition_col < 0 && h == "PARTITION") partition_col = i;
        if (address_col < 0 && h == "NODE_ADDR") address_col = i;
      }
      if (name_col < 0 || state_col < 0)
        return out.error = "sinfo header has no NODELIST/HOSTNAMES or STATE column", out;
      continue;
    }
    if (trim(line).empty()) continue;
    if (static_cast<int>(f.size()) <= std::max(name_col, state_col)) {
      out.error = "line " + std::to_string(line_no) + ": fewer columns than the header";
      return out;
    }
    flags.clear();
    read_node_state(trim(f[state_col]), state, flags);
    std::string_view reason =
        reason_col >= 0 && reason_col < static_cast<int>(f.size()) ? trim(f[reason_col]) : "";
    if (reason == "none") reason = "";
    auto hosts = expand_hostlist(trim(f[name_col]));
    if (!hosts) return out.error = "line " + std::to_string(line_no) + ": bad node list", out;
    std::string_view partition = partition_col >= 0 && partition_col < static_cast<int>(f.size())
                                     ? trim(f[partition_col])
                                     : "";
    if (!partition.empty() && partition.back() == '*') partition.remove_suffix(1);  // default
    std::string_view address =
        address_col >= 0 && address_col < static_cast<int>(f.size()) ? trim(f[address_col]) : "";
    for (auto& h : *hosts) {
      // Wide formats print a node once per partition or reservation: keep the first, and
      // collect its partitions.
      auto [at, added] = position.try_emplace(h, out.nodes.size());
      if (added)
        out.nodes.push_back(
            {std::move(h), state, flags, std::string(reason), "", {}, std::string(address)});
      auto seen = out.nodes.begin() + static_cast<std::ptrdiff_t>(at->second);
      if (!partition.empty() && std::find(seen->partitions.begin(), seen->partitions.end(),
                                          partition) == seen->partitions.end())
        seen->partitions.emplace_back(partition);
    }
  }
  if (lines.number() == 0) out.error = "empty sinfo output";
  return out;
}

std::vector<std::map<std::string, std::string>> parse_sacct(std::string_view text) {
  const auto names = split(kSacctFields, ',');
  std::vector<std::map<std::string, std::string>> out;
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    auto fields = split(line, '|');
    if (fields.size() < names.size()) continue;
    for (size_t i = names.size(); i < fields.size(); ++i)
      fields[names.size() - 1] += "|" + fields[i];
    std::map<std::string, std::string> record;
    for (size_t i = 0; i < names.size(); ++i) record[names[i]] = trim(fields[i]);
    out.push_back(std::move(record));
  }
  return out;
}

JobDetails parse_job_details(std::string_view text) {
  static const char* const kNames[] = {"StdOut",  "StdErr",    "Command",   "WorkDir",
                                       "Account", "Partition", "GroupName", "TRES"};
  JobDetails out;
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    auto fields = split(line, '\x1f');
    // Every field ends in the separator: the last piece is empty.
    if (fields.size() != std::size(kNames) + 2 || !fields.back().empty()) continue;
    auto& record = out[std::string(trim(fields[0]))];
    for (size_t i = 0; i < std::size(kNames); ++i) record[kNames[i]] = fields[i + 1];
  }
  return out;
}

std::map<std::string, std::string> sacct_record_of(
    const std::vector<std::map<std::string, std::string>>& records, const std::string& job_id,
    std::int64_t started) {
  const std::map<std::string, std::string>* latest = nullptr;
  for (const auto& rec : records) {
    if (rec.at("JobID") != job_id) continue;
    if (started > 0 && slurm_timestamp(rec.at("Start")) == started) return rec;
    latest = &rec;
  }
  return started <= 0 && latest ? *latest : std::map<std::string, std::string>{};
}

std::vector<std::map<std::string, std::string>> parse_scontrol_show(std::string_view text) {
  std::vector<std::map<std::string, std::string>> out;
  std::map<std::string, std::string> record;
  std::string last_key;
  auto flush = [&] {
    if (!record.empty()) out.push_back(std::move(record));
    record.clear();
    last_key.clear();
  };
  Lines lines(text);
  for (std::string_view line; lines.next(line);) {
    if (trim(line).empty()) {
      flush();
      continue;
    }
    for (const auto& token : split(trim(line), ' ')) {
      if (token.empty()) continue;
      size_t eq = token.find('=');
      bool is_key =
          eq != std::string::npos && eq > 0 &&
          std::all_of(token.begin(), token.begin() + static_cast<long>(eq), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '/' || c == '_';
          });
      if (is_key) {
        last_key = token.substr(0, eq);
        record[last_key] = token.substr(eq + 1);
      } else if (!last_key.empty()) {
        record[last_key] += " " + token;
      }
    }
  }
  flush();
  return out;
}

std::optional<std::string> scontrol_field(const std::map<std::string, std::string>& record,
                                          const std::string& key) {
  auto it = record.find(key);
  if (it == record.end()) return std::nullopt;
  return it->second == "(null)" ? std::string{} : it->second;
}

}  // namespace llmwatch
