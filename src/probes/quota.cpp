#include "probes/quota.h"

#include <algorithm>
#include <regex>

#include "util/regex_window.h"
#include "util/strings.h"
#include "util/units.h"

namespace llmwatch {
namespace {

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  for (auto& t : split(trim(line), ' '))
    if (!t.empty()) out.push_back(t);
  return out;
}

// "4194304*" → 4194304 and over=true; "-" or "none" → 0.
bool number(const std::string& t, std::uint64_t& value, bool* over = nullptr) {
  std::string s = t;
  if (!s.empty() && s.back() == '*') {
    s.pop_back();
    if (over) *over = true;
  }
  if (s == "-" || s == "none" || s == "unlimited") return value = 0, true;
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  auto v = to_int64(s);  // digits only: nullopt means it overflowed
  if (!v) return false;
  value = static_cast<std::uint64_t>(*v);
  return true;
}

// lfs quota and quota -w share a shape: a header with "Filesystem", then rows of
// fs used* quota limit grace files quota limit grace, 1 KiB blocks. A long filesystem name
// may sit alone on its line, with the numbers on the next.
QuotaReport parse_table(std::string_view text, const char* tool) {
  QuotaReport r;
  auto lines = split(text, '\n');
  bool header = false;
  std::vector<std::string> row;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto t = tokens(lines[i]);
    if (t.empty()) continue;
    if (t[0] == "Filesystem") {
      header = true;
      continue;
    }
    if (!header) continue;
    row = t;
    if (row.size() == 1 && i + 1 < lines.size()) {
      auto next = tokens(lines[i + 1]);
      row.insert(row.end(), next.begin(), next.end());
    }
    break;
  }
  if (row.size() < 7)
    return r.error = std::string(tool) + ": no quota row after the Filesystem header", r;
  // A missing grace column (empty when not over) shifts nothing left of it: read from the front.
  std::uint64_t kb = 0, soft = 0, hard = 0, files = 0, fsoft = 0, fhard = 0;
  size_t idx = 1;
  if (!number(row[idx++], kb, &r.over) || !number(row[idx++], soft) || !number(row[idx++], hard))
    return r.error = std::string(tool) + ": unexpected block columns", r;
  // grace is present when not a number (e.g. "6days", "none", "-") or when over quota
  std::uint64_t probe;
  if (idx < row.size() && !number(row[idx], probe))
    r.grace = row[idx++];
  else if (idx < row.size() && row[idx] == "-")
    r.grace = row[idx++];
  if (idx < row.size() && number(row[idx], files, &r.over)) {
    ++idx;
    number(row[idx++], fsoft);
    if (idx < row.size()) number(row[idx++], fhard);
  }
  r.used_bytes = kb * 1024;
  r.limit_bytes = (hard ? hard : soft) * 1024;
  r.used_files = files;
  r.limit_files = fhard ? fhard : fsoft;
  return r;
}

QuotaReport parse_mmlsquota(std::string_view text) {
  QuotaReport r;
  size_t kb_col = 2;  // "Filesystem type KB ..."; a fileset listing adds a column: read the header
  for (const auto& line : split(text, '\n')) {
    auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    auto block = tokens(std::string_view(line).substr(0, bar));
    auto file = tokens(std::string_view(line).substr(bar + 1));
    if (!block.empty() && block[0] == "Filesystem") {
      for (size_t i = 0; i < block.size(); ++i)
        if (block[i] == "KB" || block[i] == "blocks") kb_col = i;
      continue;
    }
    if (block.size() < kb_col + 3 || file.size() < 3) continue;
    std::uint64_t kb, soft, hard;
    if (!number(block[kb_col], kb) || !number(block[kb_col + 1], soft) ||
        !number(block[kb_col + 2], hard))
      continue;
    // The grace ("none", "7 days", "expired") is whatever follows in_doubt.
    for (size_t i = kb_col + 4; i < block.size(); ++i)
      r.grace += (r.grace.empty() ? "" : " ") + block[i];
    std::uint64_t files, fsoft, fhard;
    number(file[0], files);
    number(file[1], fsoft);
    number(file[2], fhard);
    r.used_bytes = kb * 1024;
    r.limit_bytes = (hard ? hard : soft) * 1024;
    r.used_files = files;
    r.limit_files = fhard ? fhard : fsoft;
    r.over = (r.limit_bytes && r.used_bytes >= r.limit_bytes) || (soft && kb > soft) ||
             line.find("EXCEEDED") != std::string::npos;
    return r;
  }
  r.error = "mmlsquota: no quota row (Filesystem ... | files ...)";
  return r;
}

// beegfs-ctl --getquota: "name|id||used|hard||files used|files hard", sizes with units.
QuotaReport parse_beegfs(std::string_view text) {
  QuotaReport r;
  for (const auto& line : split(text, '\n')) {
    std::vector<std::string> cells;
    for (auto& c : split(line, '|'))
      if (!trim(c).empty()) cells.emplace_back(trim(c));
    if (cells.size() < 6 || cells[0] == "name" || cells[0] == "user/group" ||
        cells[1].find_first_not_of("0123456789") != std::string::npos)
      continue;
    auto size = [](const std::string& s) -> Result<std::uint64_t> {
      if (s == "unlimited") return std::uint64_t{0};
      return parse_size(s);
    };
    auto used = size(cells[2]), hard = size(cells[3]);
    if (!used || !hard) continue;
    r.used_bytes = *used;
    r.limit_bytes = *hard;
    number(cells[4], r.used_files);
    number(cells[5], r.limit_files);
    r.over = r.limit_bytes && r.used_bytes > r.limit_bytes;
    return r;
  }
  r.error = "beegfs-ctl: no quota row (name|id||used|hard||files|hard)";
  return r;
}

QuotaReport parse_custom(std::string_view text, const std::string& pattern) {
  QuotaReport r;
  try {
    std::regex re(pattern);
    // The first line that matches (each through regex_window, so no line overflows the
    // matcher); a pattern never spans lines.
    std::match_results<std::string_view::const_iterator> m;
    bool found = false;
    for (std::size_t start = 0; start <= text.size() && !found;) {
      auto end = std::min(text.find('\n', start), text.size());
      auto window = regex_window(text.substr(start, end - start));
      found = std::regex_search(window.begin(), window.end(), m, re) && m.size() >= 3;
      start = end + 1;
    }
    if (!found) return r.error = "custom quota: regex did not match", r;
    auto used = parse_size(m[1].str()), limit = parse_size(m[2].str());
    if (!used || !limit) return r.error = "custom quota: groups are not sizes", r;
    r.used_bytes = *used;
    r.limit_bytes = *limit;
    r.over = r.limit_bytes && r.used_bytes > r.limit_bytes;
  } catch (const std::regex_error& e) {
    r.error = std::string("custom quota: bad regex: ") + e.what();
  }
  return r;
}

}  // namespace

QuotaReport parse_quota(const std::string& kind, std::string_view text,
                        const std::string& custom_regex) {
  if (kind == "lfs") return parse_table(text, "lfs quota");
  if (kind == "quota") return parse_table(text, "quota");
  if (kind == "mmlsquota") return parse_mmlsquota(text);
  if (kind == "beegfs") return parse_beegfs(text);
  if (kind == "custom") return parse_custom(text, custom_regex);
  QuotaReport r;
  r.error = "unknown quota kind '" + kind + "'";
  return r;
}

}  // namespace llmwatch
