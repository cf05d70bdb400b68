#include "probes/rank_timing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <system_error>

namespace llmwatch {
namespace {

// The records are flat objects the helper writes; they are read by key, not by a general JSON
// parser: at 512 ranks a job, parsing was most of a cycle's cost (bench/straggler_bench.cpp).
// A key's value: what follows "key": up to the next ',' or '}'; "" when absent.
std::string_view value_of(std::string_view line, std::string_view key) {
  std::string needle;
  needle.reserve(key.size() + 3);
  needle.append("\"").append(key).append("\":");
  auto at = line.find(needle);
  if (at == std::string_view::npos) return {};
  auto v = line.substr(at + needle.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  if (!v.empty() && v.front() == '"') {  // a string: up to its closing quote, no escapes
    auto close = v.find('"', 1);
    return close == std::string_view::npos ? std::string_view{} : v.substr(0, close + 1);
  }
  return v.substr(0, v.find_first_of(",}"));
}

// A number that is present, finite and not negative; NaN otherwise.
double non_negative(std::string_view line, std::string_view key) {
  auto v = value_of(line, key);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  double out = NAN;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return NAN;
  return std::isfinite(out) && out >= 0 ? out : NAN;
}

// The rank a file name says: rank-12.jsonl -> 12; -1 for any other name.
int rank_of_file(const char* name) {
  std::string_view n(name);
  if (n.rfind("rank-", 0) != 0 || n.size() <= 11 || n.substr(n.size() - 6) != ".jsonl") return -1;
  int rank = 0;
  for (char c : n.substr(5, n.size() - 11)) {
    if (c < '0' || c > '9' || rank > 10'000'000) return -1;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

// The last `bytes` of a file, from the first whole line; "" with `why` set when unreadable.
std::string tail_of(const std::string& path, std::size_t bytes, std::string& why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    why = path + ": " + std::strerror(errno);
    return {};
  }
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    off_t from = st.st_size > static_cast<off_t>(bytes) ? st.st_size - bytes : 0;
    out.resize(static_cast<std::size_t>(st.st_size - from));
    ssize_t got = ::pread(fd, out.data(), out.size(), from);
    out.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    if (from > 0) {  // the first line is cut: drop it
      auto nl = out.find('\n');
      out.erase(0, nl == std::string::npos ? out.size() : nl + 1);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

RankSeries parse_rank_timing(std::string_view text, int* bad_lines) {
  RankSeries out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    // A line still being written has no newline yet: it waits for the next look.
    if (nl == std::string_view::npos) break;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    bool object = line.size() > 1 && line.front() == '{' && line.back() == '}';
    double compute = object ? non_negative(line, "compute_s") : NAN;
    double rank = object ? non_negative(line, "rank") : NAN;
    double step = object ? non_negative(line, "step") : NAN;
    if (std::isnan(compute) || std::isnan(rank) || std::isnan(step) || rank > 1e7 || step > 9e15) {
      if (bad_lines) ++*bad_lines;
      continue;
    }
    RankSample s;
    s.step = static_cast<std::int64_t>(step);
    s.compute_s = compute;
    double wait = non_negative(line, "wait_s"), ts = non_negative(line, "ts");
    s.wait_s = std::isnan(wait) ? 0 : wait;
    s.ts = std::isnan(ts) ? 0 : ts;
    out.rank = static_cast<int>(rank);
    if (auto h = value_of(line, "host"); h.size() >= 2 && h.front() == '"')
      out.host.assign(h.substr(1, h.size() - 2));
    out.samples.push_back(s);
  }
  return out;
}

RankTimingRead read_rank_timing(const std::string& dir, std::size_t tail_bytes,
                                std::size_t max_files) {
  RankTimingRead out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    out.error = "cannot read timing directory '" + dir + "': " + std::strerror(errno);
    return out;
  }
  std::vector<std::pair<int, std::string>> files;
  while (dirent* e = ::readdir(d))
    if (int rank = rank_of_file(e->d_name); rank >= 0) files.emplace_back(rank, e->d_name);
  ::closedir(d);
  std::sort(files.begin(), files.end());
  if (files.size() > max_files) files.resize(max_files);
  for (const auto& [rank, name] : files) {
    std::string why;
    std::string text = tail_of(dir + "/" + name, tail_bytes, why);
    if (!why.empty()) {
      ++out.bad_lines;
      continue;
    }
    RankSeries s = parse_rank_timing(text, &out.bad_lines);
    if (s.samples.empty()) continue;
    s.rank = rank;  // the file's name decides: a record copied from elsewhere does not move it
    out.ranks.push_back(std::move(s));
  }
  return out;
}

}  // namespace llmwatch
