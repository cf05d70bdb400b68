#include "probes/rank_timing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace llmwatch {
namespace {

// A number that is present, finite and not negative; NaN otherwise.
double non_negative(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return NAN;
  double v = it->get<double>();
  return std::isfinite(v) && v >= 0 ? v : NAN;
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
    auto j = nlohmann::json::parse(line, nullptr, false);
    double compute = j.is_object() ? non_negative(j, "compute_s") : NAN;
    double rank = j.is_object() ? non_negative(j, "rank") : NAN;
    double step = j.is_object() ? non_negative(j, "step") : NAN;
    if (std::isnan(compute) || std::isnan(rank) || std::isnan(step) || rank > 1e7) {
      if (bad_lines) ++*bad_lines;
      continue;
    }
    RankSample s;
    s.step = static_cast<std::int64_t>(step);
    s.compute_s = compute;
    double wait = non_negative(j, "wait_s"), ts = non_negative(j, "ts");
    s.wait_s = std::isnan(wait) ? 0 : wait;
    s.ts = std::isnan(ts) ? 0 : ts;
    out.rank = static_cast<int>(rank);
    if (auto h = j.find("host"); h != j.end() && h->is_string()) out.host = h->get<std::string>();
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
