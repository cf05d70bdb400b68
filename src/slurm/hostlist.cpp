#include "slurm/hostlist.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace llmwatch {
namespace {

// The largest Slurm clusters have about 11,000 nodes. A list longer than this in all, however
// it is split into expressions and bracket groups, is garbage; before, 1 Mi held per expression
// only, and a list of many expanded without end (the fuzzer's 417,036 hosts took 14 s).
constexpr size_t kMaxHosts = 1 << 16;
const std::string kTooLong = "hostlist longer than " + std::to_string(kMaxHosts) + " hosts";

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

std::string pad(unsigned long long n, size_t width) {
  std::string s = std::to_string(n);
  return s.size() < width ? std::string(width - s.size(), '0') + s : s;
}

// "1-3,5,007-009" → the strings in order, or why not.
Status expand_range(std::string_view body, std::vector<std::string>& out) {
  if (body.empty()) return Error{"empty brackets"};
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string_view item = body.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t dash = item.find('-');
    std::string_view lo = item.substr(0, dash);
    std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 18 || hi.size() > 18)
      return Error{"bad range '" + std::string(item) + "'"};
    unsigned long long a = std::stoull(std::string(lo)), b = std::stoull(std::string(hi));
    if (b < a) return Error{"descending range '" + std::string(item) + "'"};
    if (b - a >= kMaxHosts || out.size() + (b - a) >= kMaxHosts)
      return Error{kTooLong + ": '" + std::string(item) + "'"};
    for (unsigned long long n = a; n <= b; ++n) out.push_back(pad(n, lo.size()));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return {};
}

// One host expression (no top-level commas): a product of literal parts and bracket groups,
// appended to `out` (the whole list's hosts so far, which count toward kMaxHosts).
Status expand_one(std::string_view expr, std::vector<std::string>& out) {
  std::vector<std::string> partial = {""};
  size_t pos = 0;
  while (pos < expr.size()) {
    size_t open = expr.find('[', pos);
    std::string_view literal =
        expr.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos);
    if (literal.find(']') != std::string_view::npos)
      return Error{"unbalanced ']' in '" + std::string(expr) + "'"};
    for (auto& p : partial) p += literal;
    if (open == std::string_view::npos) break;
    size_t close = expr.find(']', open);
    if (close == std::string_view::npos)
      return Error{"unterminated '[' in '" + std::string(expr) + "'"};
    std::vector<std::string> values;
    if (auto range = expand_range(expr.substr(open + 1, close - open - 1), values); !range)
      return range;
    if (out.size() + partial.size() * values.size() > kMaxHosts) return Error{kTooLong};
    std::vector<std::string> next;
    next.reserve(partial.size() * values.size());
    for (const auto& p : partial)
      for (const auto& v : values) next.push_back(p + v);
    partial = std::move(next);
    pos = close + 1;
  }
  if (out.size() + partial.size() > kMaxHosts) return Error{kTooLong};
  for (auto& p : partial) {
    if (p.empty()) return Error{"empty host name"};
    out.push_back(std::move(p));
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return Error{"unbalanced ']'"};
    if ((c == ',' || c == ' ') && depth == 0) {
      std::string_view expr = list.substr(start, i - start);
      Status one = expr.empty() ? Status{} : expand_one(expr, out);
      if (!one) return Error{one.error()};
      start = i + 1;
    }
  }
  if (depth != 0) return Error{"unterminated '['"};
  return out;
}

std::vector<std::string> hosts_in(std::string_view list) {
  return expand_hostlist(list).value_or(std::vector<std::string>{});
}

std::string compress_hostlist(const std::vector<std::string>& hosts) {
  // Group "prefix + digits" by (prefix, digit width); keep first-appearance order of groups.
  struct Group {
    std::string prefix;
    size_t width;
    std::vector<unsigned long long> numbers;
  };
  std::vector<Group> groups;
  std::vector<std::pair<int, std::string>> order;  // group index or -1 with a literal name
  std::map<std::pair<std::string, size_t>, size_t> index;
  for (const auto& h : hosts) {
    size_t d = h.size();
    while (d > 0 && std::isdigit(static_cast<unsigned char>(h[d - 1]))) --d;
    if (d == h.size() || h.size() - d > 18) {
      order.emplace_back(-1, h);
      continue;
    }
    std::string prefix = h.substr(0, d);
    std::string digits = h.substr(d);
    // "node10" and "node010" pad differently; an unpadded number has width 0 (any length).
    size_t width = digits.size() > 1 && digits[0] == '0' ? digits.size() : 0;
    auto key = std::make_pair(prefix, width);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back({prefix, width, {}});
      order.emplace_back(static_cast<int>(it->second), "");
    }
    groups[it->second].numbers.push_back(std::stoull(digits));
  }
  std::string out;
  for (const auto& [gi, literal] : order) {
    if (!out.empty()) out += ',';
    if (gi < 0) {
      out += literal;
      continue;
    }
    auto& g = groups[gi];
    std::sort(g.numbers.begin(), g.numbers.end());
    g.numbers.erase(std::unique(g.numbers.begin(), g.numbers.end()), g.numbers.end());
    if (g.numbers.size() == 1) {
      out += g.prefix + pad(g.numbers[0], g.width);
      continue;
    }
    std::string ranges;
    for (size_t i = 0; i < g.numbers.size();) {
      size_t j = i;
      while (j + 1 < g.numbers.size() && g.numbers[j + 1] == g.numbers[j] + 1) ++j;
      if (!ranges.empty()) ranges += ',';
      ranges += pad(g.numbers[i], g.width);
      if (j > i) ranges += "-" + pad(g.numbers[j], g.width);
      i = j + 1;
    }
    out += g.prefix + "[" + ranges + "]";
  }
  return out;
}

}  // namespace llmwatch
