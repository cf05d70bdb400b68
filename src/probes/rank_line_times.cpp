#include "probes/rank_line_times.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace llmwatch {
namespace {

bool digit(char c) {
  return c >= '0' && c <= '9';
}
bool word_char(char c) {
  return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// A run of digits at the front of `s` as a number below `limit`; -1 when there is none.
std::int64_t leading_integer(std::string_view s, std::int64_t limit, std::size_t& used) {
  std::int64_t v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  used = static_cast<std::size_t>(p - s.data());
  return ec == std::errc() && v >= 0 && v < limit ? v : -1;
}

// The rank a line's prefix names: "[rank12]:" (torchrun) or srun --label's "12: " (padded to
// the widest task number; `srun_task` then). The text after it goes to `rest`; -1 when the line
// has neither.
int rank_prefix(std::string_view line, std::string_view& rest, bool& srun_task) {
  srun_task = false;
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  std::size_t used = 0;
  if (line.substr(0, 5) == "[rank") {
    auto rank = leading_integer(line.substr(5), kMaxLogRank, used);
    if (rank < 0 || line.substr(5 + used, 2) != "]:") return -1;
    rest = line.substr(5 + used + 2);
    return static_cast<int>(rank);
  }
  auto rank = leading_integer(line, kMaxLogRank, used);
  // "12: " and not "12:34:56": a clock's digits follow its colon, a label's space does.
  if (rank < 0 || line.substr(used, 2) != ": ") return -1;
  rest = line.substr(used + 2);
  // srun --label over one torchrun a node: the label is the node's task, the rank follows.
  std::string_view inner;
  bool inner_task = false;
  if (rest.substr(0, 5) == "[rank")
    if (int r = rank_prefix(rest, inner, inner_task); r >= 0 && !inner_task) {
      rest = inner;
      return r;
    }
  srun_task = true;
  return static_cast<int>(rank);
}

// What follows a field's name: "_ms", " (ms)", then ":", "=" or spaces, the number, then its
// unit ("612.3 ms", "0.61s"). The unit's seconds (1e-3 or 1) in `unit`, 0 when none is said.
struct Field {
  bool found = false;
  double value = 0, unit = 0;
};

double unit_at(std::string_view& s) {
  for (auto [text, seconds] : {std::pair<std::string_view, double>{"ms", 1e-3}, {"s", 1.0}}) {
    if (s.substr(0, text.size()) == text &&
        (s.size() == text.size() || !word_char(s[text.size()]))) {
      s.remove_prefix(text.size());
      return seconds;
    }
  }
  return 0;
}

Field field_after(std::string_view s, bool time_word) {
  Field out;
  if (time_word) {  // "compute time", "compute_time"
    if (s.substr(0, 5) == "_time" || s.substr(0, 5) == " time") s.remove_prefix(5);
  }
  double unit = 0;
  if (!s.empty() && s.front() == '_') {  // compute_ms, compute_s
    s.remove_prefix(1);
    unit = unit_at(s);
    if (unit == 0) return out;
  } else {
    std::string_view t = s;
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    if (t.substr(0, 1) == "(" || t.substr(0, 1) == "[") {  // compute (ms): 612.3
      t.remove_prefix(1);
      unit = unit_at(t);
      if (unit != 0 && (t.substr(0, 1) == ")" || t.substr(0, 1) == "]"))
        s = t.substr(1);
      else
        unit = 0;
    }
  }
  if (!s.empty() && word_char(s.front())) return out;  // "computed", "compute_kernel"
  while (!s.empty() && (s.front() == ' ' || s.front() == ':' || s.front() == '='))
    s.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v < 0) return out;
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const double said = unit_at(s);
  out.found = true;
  out.value = v;
  out.unit = unit != 0 ? unit : said;
  return out;
}

// The first occurrence of `name` as a whole word (not inside "forward-compute" when looking
// for "compute") that a number follows.
Field find_field(std::string_view text, std::string_view name, bool time_word = true) {
  for (std::size_t at = text.find(name); at != std::string_view::npos;
       at = text.find(name, at + 1)) {
    if (at > 0 && (word_char(text[at - 1]) || text[at - 1] == '-')) continue;
    if (auto f = field_after(text.substr(at + name.size()), time_word); f.found) return f;
  }
  return {};
}

// "iteration 340/500000", "step: 340", "global_step=340": the step. -1 when none.
std::int64_t find_step(std::string_view lower) {
  for (std::string_view name : {"iteration", "iter", "step"}) {
    for (std::size_t at = lower.find(name); at != std::string_view::npos;
         at = lower.find(name, at + 1)) {
      if (at > 0 && (digit(lower[at - 1]) || (lower[at - 1] >= 'a' && lower[at - 1] <= 'z')))
        continue;
      std::string_view s = lower.substr(at + name.size());
      std::size_t skip = 0;
      while (skip < s.size() &&
             (s[skip] == ' ' || s[skip] == ':' || s[skip] == '=' || s[skip] == '#'))
        ++skip;
      if (skip == 0 && !s.empty()) continue;  // "steps", "step_time"
      std::size_t used = 0;
      auto step = leading_integer(s.substr(skip), 9'000'000'000'000'000, used);
      if (step >= 0 && used > 0) return step;
    }
  }
  return -1;
}

}  // namespace

LinePrinter line_printer(std::string_view line) {
  std::string_view rest;
  LinePrinter out;
  out.rank = rank_prefix(line, rest, out.srun_task);
  if (out.rank < 0) out.srun_task = false;
  return out;
}

std::optional<RankLine> parse_rank_line(std::string_view line) {
  std::string_view rest;
  bool srun_task = false;
  const int rank = rank_prefix(line, rest, srun_task);
  if (rank < 0) return std::nullopt;
  std::string lower(rest.substr(0, 4096));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; });
  RankLine out;
  out.rank = rank;
  out.step = find_step(lower);
  if (out.step < 0) return std::nullopt;
  Field fwd = find_field(lower, "forward-compute", false);
  Field bwd = find_field(lower, "backward-compute", false);
  if (fwd.found && bwd.found) {
    out.compute_s = fwd.unit > 0 && bwd.unit > 0 ? fwd.value * fwd.unit + bwd.value * bwd.unit : -1;
    if (!std::isfinite(out.compute_s)) return std::nullopt;  // two huge numbers
    return out;
  }
  Field compute = find_field(lower, "compute");
  if (!compute.found) return std::nullopt;  // a rank's line, but not a timing one
  out.compute_s = compute.unit > 0 ? compute.value * compute.unit : -1;
  return out;
}

void RankLineTimes::feed(std::string_view line) {
  auto got = parse_rank_line(line);
  if (!got) return;
  if (got->compute_s < 0) {
    ++without_unit_;
    return;
  }
  if (got->step <= taken_upto_) return;  // its step was judged without it
  auto& ranks = open_[got->step];
  ranks[got->rank] = got->compute_s;
  ++kept_;
  world_ = std::max(world_, ranks.size());
  while (open_.size() > 1 && open_.begin()->second.size() >= world_) close_oldest();
  while (open_.size() > kOpenSteps) close_oldest();
}

void RankLineTimes::close_oldest() {
  auto oldest = open_.begin();
  taken_upto_ = oldest->first;
  done_.push_back({oldest->first, std::move(oldest->second)});
  open_.erase(oldest);
}

std::vector<RankTimesBlock> RankLineTimes::take() {
  std::vector<RankTimesBlock> out;
  out.swap(done_);
  return out;
}

}  // namespace llmwatch
