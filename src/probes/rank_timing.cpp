#include "probes/rank_timing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <unordered_map>

#include "util/file_key.h"

namespace llmwatch {
namespace {

// The records are flat objects the helper writes; they are read by key, not by a general JSON
// parser: at 512 ranks a job, parsing was most of a cycle's cost (bench/straggler_bench.cpp).
// A value's text, from the text after its key's colon: a string whole, else up to the next ','
// or '}'.
std::string_view value_at(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  if (!v.empty() && v.front() == '"') {  // a string: up to its closing quote, no escapes
    auto close = v.find('"', 1);
    return close == std::string_view::npos ? std::string_view{} : v.substr(0, close + 1);
  }
  return v.substr(0, v.find_first_of(",}"));
}

// A key's value in a line: what follows "key":, as value_at reads it; "" when absent.
std::string_view value_of(std::string_view line, std::string_view key) {
  std::string needle;
  needle.reserve(key.size() + 3);
  needle.append("\"").append(key).append("\":");
  auto at = line.find(needle);
  return at == std::string_view::npos ? std::string_view()
                                      : value_at(line.substr(at + needle.size()));
}

// A value that is a number, finite and not negative; NaN otherwise.
double non_negative_value(std::string_view v) {
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  double out = NAN;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return NAN;
  return std::isfinite(out) && out >= 0 ? out : NAN;
}

// A key's number in a line, as non_negative_value reads it.
double non_negative(std::string_view line, std::string_view key) {
  return non_negative_value(value_of(line, key));
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

// The last `bytes` of a file, from the first whole line, into `out`; "" with `why` set when
// unreadable.
void tail_into(const std::string& path, std::size_t bytes, std::string& out, std::string& why) {
  out.clear();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    why = path + ": " + std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = path + ": not a regular file (a FIFO, device or directory cannot be read)";
  } else {
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
}

std::string tail_of(const std::string& path, std::size_t bytes, std::string& why) {
  std::string out;
  tail_into(path, bytes, out, why);
  return out;
}

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// Where each of a summary's keys' values begins, found in one pass over its text: a row-a-node
// summary quotes every node's name and ranks, and a search of the whole text for each key
// ("now":) stopped at every one of those quotes, most of its parse (llmwatch_bench --ranks 512).
// The summary's strings hold no escapes (checked where they are read). An array's value is
// stepped over whole, to its closing bracket (its strings hold none: array_of reads it so):
// stopping at each of its 128 quoted names and ranks was about a ninth of a rewrite's read.
class SummaryKeys {
 public:
  explicit SummaryKeys(std::string_view text) {
    for (std::size_t at = text.find('"'); at != std::string_view::npos && count_ < kMost;) {
      const std::size_t close = text.find('"', at + 1);
      if (close == std::string_view::npos) break;
      std::size_t next = close + 1;
      while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
      if (next < text.size() && text[next] == ':') {
        keys_[count_++] = {text.substr(at + 1, close - at - 1), text.substr(next + 1)};
        std::size_t value = next + 1;
        while (value < text.size() && space(text[value])) ++value;
        if (value < text.size() && text[value] == '[')
          if (const std::size_t end = text.find(']', value); end != std::string_view::npos)
            next = end;  // an unclosed array is scanned as before: its error is array_of's
      }
      at = text.find('"', next);
    }
  }
  // The text after "key": (to the end), or nullopt when the key is absent; its first listing.
  std::optional<std::string_view> after(std::string_view key) const {
    for (std::size_t i = 0; i < count_; ++i)
      if (keys_[i].first == key) return keys_[i].second;
    return std::nullopt;
  }

 private:
  static constexpr std::size_t kMost = 32;  // a summary has 13; more are not read
  std::pair<std::string_view, std::string_view> keys_[kMost];
  std::size_t count_ = 0;
};

// The text between "key":[ and its closing ]; nullopt when the array is absent or unclosed.
// The summary holds no nested arrays and its strings hold no brackets (checked by the caller).
std::optional<std::string_view> array_of(const SummaryKeys& keys, std::string_view key) {
  auto v = keys.after(key);
  if (!v) return std::nullopt;
  auto open = v->find_first_not_of(" \t\r\n");
  if (open == std::string_view::npos || (*v)[open] != '[') return std::nullopt;
  auto close = v->find(']', open);
  if (close == std::string_view::npos) return std::nullopt;
  return v->substr(open + 1, close - open - 1);
}

// A key's number that is present, finite and not negative; NaN otherwise.
double non_negative(const SummaryKeys& keys, std::string_view key) {
  auto after = keys.after(key);
  return after ? non_negative_value(value_at(*after)) : NAN;
}

// Calls `f` with each comma-separated item of an array's text, trimmed; false as soon as `f` is.
template <class F>
bool each_item(std::string_view array, F&& f) {
  if (std::all_of(array.begin(), array.end(), space)) return true;  // []
  while (true) {
    auto comma = array.find(',');
    auto item = array.substr(0, comma);
    while (!item.empty() && space(item.front())) item.remove_prefix(1);
    while (!item.empty() && space(item.back())) item.remove_suffix(1);
    if (item.empty() || !f(item)) return false;
    if (comma == std::string_view::npos) return true;
    array.remove_prefix(comma + 1);
  }
}

// The powers of ten a plain decimal's fraction is divided by: exact doubles, up to 15 digits.
constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

// A short plain decimal ("0.412345", "17") read from `p`, as an integer over a power of ten:
// exact, because both are exact doubles (at most 15 digits, 10^k for k <= 22) and one division
// rounds once (Clinger's fast path), so it is what from_chars gives, at a fraction of the cost.
// Returns where the digits stopped; `ok` (and `out`) only for 1 to 15 digits not ending at their
// point ("5." is left to from_chars, as are a sign, an exponent, more digits).
[[gnu::noinline]] const char* scan_digits_bytewise(const char* p, const char* end, double& out,
                                                   bool& ok) {
  // The whole digits, then the fraction's, each in a loop of its own: one loop that also
  // tracked whether it had passed the point was a quarter of a summary's parse.
  std::uint64_t mantissa = 0;  // wraps past 19 digits: such an item is not `ok` anyway
  auto digits_from = [&](const char* q) {
    for (; q < end && static_cast<unsigned char>(*q - '0') < 10; ++q)
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(*q - '0');
    return q;
  };
  const char* point = digits_from(p);
  std::ptrdiff_t digits = point - p, fraction = -1;  // digits after the point; -1: no point
  p = point;
  if (p < end && *p == '.') {
    p = digits_from(point + 1);
    fraction = p - (point + 1);
    digits += fraction;
  }
  ok = digits > 0 && digits <= 15 && fraction != 0;
  if (ok)
    out = fraction > 0 ? static_cast<double>(mantissa) / kPow10[fraction]
                       : static_cast<double>(mantissa);
  return p;
}

// The value of the first `count` (1 to 8) bytes of `w`, each a digit's value (0 to 9),
// the first the most significant; the bytes past them are ignored. Eight at once (SWAR): the
// shift drops the bytes past them and puts zeros in front, as leading digits.
std::uint64_t digits_value(std::uint64_t w, unsigned count) {
  std::uint64_t v = w << (8 * (8 - count));
  v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFull;    // pairs of digits, in 16 bits each
  v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFull;  // fours, in 32 bits each
  return (v * 10000 + (v >> 32)) & 0xFFFFFFFFull;     // all eight
}

// As scan_digits_bytewise, for a number that ends within the 8 bytes at `p`, as the helper's
// do ("0.412345", "0.4", "17"): read from those bytes at once, where a loop a digit was about 12
// instructions a character and most of a summary's parse (llmwatch_bench --ranks 512). Anything
// else (a longer number, no digit before the point, 8 bytes not left) is read byte by byte.
// Inlined into the loop over an array's numbers: a call a number, its result stored and loaded
// through references, was a third of what the fast path costs.
[[gnu::always_inline]] inline const char* scan_plain_decimal(const char* p, const char* end,
                                                             double& out, bool& ok) {
  static_assert(std::endian::native == std::endian::little, "the bytes are read little-endian");
  if (end - p < 8) return scan_digits_bytewise(p, end, out, ok);
  constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ull, kThrees = 0x3030303030303030ull;
  std::uint64_t w = 0;
  std::memcpy(&w, p, 8);
  // A byte is a digit when its high nibble is 3 and stays 3 once 6 is added (0x30-0x39); a
  // carry out of a byte only reaches the bytes after it, past the first non-digit.
  const std::uint64_t not_digit =
      ((w & kHigh) ^ kThrees) | (((w + 0x0606060606060606ull) & kHigh) ^ kThrees);
  const unsigned whole = static_cast<unsigned>(std::countr_zero(not_digit)) / 8;  // 8: none
  if (whole == 0 || whole == 8) return scan_digits_bytewise(p, end, out, ok);
  const std::uint64_t digits = w & 0x0F0F0F0F0F0F0F0Full;  // a digit's byte is its value
  if (p[whole] != '.') {                                   // a whole number
    out = static_cast<double>(digits_value(digits, whole));
    ok = true;
    return p + whole;
  }
  const std::uint64_t below = (1ull << (8 * whole)) - 1;  // the bytes before the point
  const std::uint64_t after = not_digit & ~below & ~(0xFFull << (8 * whole));
  // Where the fraction stops: at a non-digit in the 8 bytes, or at their end when the byte
  // after them is not a digit (a helper's "0.412345" is 8 bytes).
  unsigned stop = after ? static_cast<unsigned>(std::countr_zero(after)) / 8 : 8;
  if (stop == whole + 1 ||
      (stop == 8 && end - p > 8 && static_cast<unsigned char>(p[8] - '0') < 10))
    return scan_digits_bytewise(p, end, out, ok);
  // The digits without the point: those before it, then those after it moved down a byte.
  const std::uint64_t joined = (digits & below) | ((digits >> 8) & ~below);
  out = static_cast<double>(digits_value(joined, stop - 1)) / kPow10[stop - 1 - whole];
  ok = true;
  return p + stop;
}

// A finite, non-negative number that is the whole item.
bool number_item(std::string_view item, double& out) {
  const char* end = item.data() + item.size();
  bool ok = false;
  if (scan_plain_decimal(item.data(), end, out, ok) == end && ok) return true;
  auto [stop, ec] = std::from_chars(item.data(), end, out);
  return ec == std::errc() && stop == end && std::isfinite(out) && out >= 0;
}

// An array's numbers in one pass: a plain decimal (what the helper writes) is read as it is
// scanned, with no item cut out first; any other item is cut at its comma, trimmed and read by
// number_item. false at the first item that is not a non-negative number. At 512 ranks a job,
// splitting each item before reading it was most of a summary's parse.
bool read_numbers(std::string_view array, std::vector<double>& out) {
  const char* p = array.data();
  const char* const end = p + array.size();
  while (p < end && space(*p)) ++p;
  if (p == end) return true;  // []
  while (true) {
    while (p < end && space(*p)) ++p;
    const char* item = p;
    double v = 0;
    bool ok = false;
    p = scan_plain_decimal(p, end, v, ok);
    while (p < end && space(*p)) ++p;
    if (!ok || (p < end && *p != ',')) {
      p = std::find(item, end, ',');
      std::string_view whole(item, static_cast<std::size_t>(p - item));
      while (!whole.empty() && space(whole.back())) whole.remove_suffix(1);
      if (whole.empty() || !number_item(whole, v)) return false;
    }
    out.push_back(v);
    if (p == end) return true;
    ++p;  // the comma
  }
}

// An array's numbers into `out` (cleared first); false with `why` set when it is absent or holds
// anything else.
bool numbers_of(const SummaryKeys& keys, std::string_view key, std::vector<double>& out,
                std::string& why) {
  out.clear();
  auto array = array_of(keys, key);
  if (!array) {
    why = "no \"" + std::string(key) + "\" array";
    return false;
  }
  out.reserve(array->size() / 4);  // an upper bound for numbers of 3 characters or more
  if (read_numbers(*array, out)) return true;
  why = "\"" + std::string(key) + "\" holds something that is not a non-negative number";
  return false;
}

// What a summary's parse works in, kept by each thread that parses: the jobs' reads run on a
// few long-lived workers, and at 300 new 512-rank summaries a cycle (1,000 jobs at 10 s steps)
// their allocations contended for malloc's arenas: futex waits were a fifth of a summary's
// read (bench/cycle_bench.cpp --ranks 512). The text read is kept here too.
struct SummaryScratch {
  std::string text;
  std::vector<std::string_view> names;
  std::vector<std::uint32_t> order, host_at;
  std::vector<double> host, rank, now, best, spread_of, spread;
  std::vector<int> ranks, sorted;  // the ranks listed, in order and sorted
};

SummaryScratch& scratch() {
  thread_local SummaryScratch s;
  return s;
}

// Each listed name's node, numbered by first appearance, into `host_at`; the nodes' names, once
// each, into `hosts`. A name listed twice is one node. That is rare, so it is found by one
// sort of the names, not by a hash (and an allocation) per name.
void number_hosts(const std::vector<std::string_view>& names, std::vector<std::uint32_t>& order,
                  std::vector<std::uint32_t>& host_at, std::vector<std::string>& hosts) {
  const auto n = static_cast<std::uint32_t>(names.size());
  // Names listed in order, each once, as a job's ranks mostly list their nodes: each is its own
  // node, with no sort (the sort's comparisons were a sixth of a 64-node summary's parse).
  if (std::adjacent_find(names.begin(), names.end(), [](std::string_view a, std::string_view b) {
        return !(a < b);
      }) == names.end()) {
    host_at.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) host_at[i] = i;
    hosts.assign(names.begin(), names.end());
    return;
  }
  order.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  // Ties in listing order: not std::stable_sort, which allocates a buffer each call (the reads'
  // threads then waited on each other in malloc).
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const int c = names[a].compare(names[b]);
    return c != 0 ? c < 0 : a < b;
  });
  // First each name's first listing (the first of its run in that order), then, in
  // listing order, its node: a first listing is a new node, a later one takes the node its
  // first listing, numbered already, was given.
  host_at.resize(n);
  for (std::uint32_t i = 0; i < n; ++i)
    host_at[order[i]] =
        i > 0 && names[order[i]] == names[order[i - 1]] ? host_at[order[i - 1]] : order[i];
  hosts.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (host_at[i] == i) {
      host_at[i] = static_cast<std::uint32_t>(hosts.size());
      hosts.emplace_back(names[i]);
    } else {
      host_at[i] = host_at[host_at[i]];
    }
  }
}

constexpr std::size_t kSummaryMaxBytes = 8 << 20;  // 16,384 ranks are ~400 KiB

// The last summary read from each directory: one that rank 0 has not rewritten is neither read
// nor parsed again. Known by its stat; a rewrite whose windows are the same as before keeps the
// same object, and its verdict (a rewrite always carries a new "ts"). The text itself is not
// kept, nor hashed: 13 KiB a 512-rank job, 13 MiB at 1,000 such jobs, and a hash of each
// rewrite's whole text cost more than its figures' comparison.
struct SummaryMemo {
  FileKey file;
  TimingSummary parsed;
  std::shared_ptr<const RankWindows> windows;
  // Rank 0 rewrites its summary every few steps, at a steady cadence: the gaps between its last
  // rewrites (by its "ts"; 0: not known). Until a rewrite is due, by the cycle's clock, the
  // file is not even stat'ed (at 1,000 jobs, a stat each was a fifth of timing's own CPU).
  double gap = 0, gap_before = 0;
  double read_at = 0, quiet_until = 0;  // the cycle's clock; quiet while read_at <= now < it
};

// At most this long without a stat, whatever the cadence said: a run whose steps sped up (a
// checkpoint pause in the gap that set it) is seen late by at most about this much.
constexpr double kMaxQuietS = 120;

// Until when no rewrite of a summary written at `ts` is due, read at `now` (the cycle's clock):
// 0.8 of its cadence (the lesser of its last two gaps, so one gap with a checkpoint pause in it
// does not count) after its write, by the writer's clock; never past kMaxQuietS from now, nor
// on a writer's clock that is ahead.
double quiet_until(const SummaryMemo& m, double now) {
  const double gap = std::min(m.gap, m.gap_before);
  if (!(gap > 0) || now <= 0) return 0;
  const double quiet = std::min(0.8 * gap, kMaxQuietS);
  return now + std::clamp(m.parsed.ts + quiet - now, 0.0, quiet);
}

// The memo in shards, each with its own lock: the jobs' reads run on several threads, and with
// one lock for all 1,000 jobs they waited on each other (futex sleeps under the lookups in a perf
// profile of the cycle). The lock is never held over a read: a hung mount must not hold up other
// jobs' reads.
struct MemoShard {
  std::mutex mu;
  std::unordered_map<std::string, SummaryMemo> map;
};
constexpr std::size_t kMemoShards = 64;
// Past this a shard is emptied (directories came and went): twice its even share of 16,384
// directories, so that hashing's unevenness empties none while fewer are watched.
constexpr std::size_t kMemoPerShard = 2 * 16384 / kMemoShards;

MemoShard& memo_shard(const std::string& path) {
  static std::array<MemoShard, kMemoShards> shards;
  return shards[std::hash<std::string>{}(path) % kMemoShards];
}

// What the memo holds of a summary, copied out in one look-up: whether no rewrite is due at
// `now` (it is then not looked at: a clock that went back, or a summary older than the task,
// looks), and else what the stat and the parse compare with.
struct MemoSeen {
  bool quiet = false;
  FileKey file;
  double ts = 0, gap = 0;
  std::string error;
  std::shared_ptr<const RankWindows> windows;  // null: none read before
};

MemoSeen memo_seen(const std::string& path, double now, double not_before) {
  MemoSeen out;
  MemoShard& shard = memo_shard(path);
  std::lock_guard lock(shard.mu);
  auto m = shard.map.find(path);
  if (m == shard.map.end() || !m->second.windows) return out;
  const SummaryMemo& memo = m->second;
  out.quiet =
      now > 0 && memo.parsed.ts >= not_before && memo.read_at <= now && now < memo.quiet_until;
  out.file = memo.file;
  out.ts = memo.parsed.ts;
  out.gap = memo.gap;
  out.error = memo.parsed.error;
  out.windows = memo.windows;
  return out;
}

bool same_rank(const RankWindow& a, const RankWindow& b) {
  return a.rank == b.rank && a.host == b.host && a.now == b.now && a.best == b.best &&
         a.window_s == b.window_s;
}

bool same_node(const NodeWindow& a, const NodeWindow& b) {
  return a.host == b.host && a.slowest == b.slowest && a.now == b.now && a.best == b.best &&
         a.peers == b.peers && a.spread == b.spread && a.ranks_from == b.ranks_from &&
         a.ranks_to == b.ranks_to;
}

// Whether two reads of a job's summary judge alike: the same nodes, ranks and figures.
bool same_windows(const RankWindows& a, const RankWindows& b) {
  return a.window_s == b.window_s && a.layout == b.layout && a.slowest_only == b.slowest_only &&
         std::equal(a.nodes.begin(), a.nodes.end(), b.nodes.begin(), b.nodes.end(), same_node) &&
         std::equal(a.ranks.begin(), a.ranks.end(), b.ranks.begin(), b.ranks.end(), same_rank) &&
         a.node_ranks == b.node_ranks && a.host_ranks == b.host_ranks && a.hosts == b.hosts;
}

// The parse of `text` without its windows, which go to `windows`: the object read before while
// they are the same. The text is parsed outside the lock: the jobs' reads run on several threads.
TimingSummary parsed_summary(const std::string& path, const FileKey& file, std::string_view text,
                             double now, const MemoSeen& seen,
                             std::shared_ptr<const RankWindows>& windows) {
  const std::shared_ptr<const RankWindows>& before = seen.windows;  // its nodes and ranks
  SummaryMemo fresh;
  fresh.file = file;
  fresh.parsed = parse_timing_summary(text, before.get());
  // A rewrite after one read before: its cadence. A "ts" that did not move on (a new task's
  // first, a clock set back) starts it again.
  if (fresh.parsed.error.empty() && seen.ts > 0 && fresh.parsed.ts > seen.ts) {
    fresh.gap = fresh.parsed.ts - seen.ts;
    fresh.gap_before = seen.gap;
  }
  fresh.read_at = now;
  fresh.quiet_until = quiet_until(fresh, now);
  if (before && fresh.parsed.error.empty() && same_windows(fresh.parsed.windows, *before))
    fresh.windows = before;
  else
    fresh.windows = std::make_shared<const RankWindows>(std::move(fresh.parsed.windows));
  fresh.parsed.windows = {};
  windows = fresh.windows;
  TimingSummary out = fresh.parsed;
  MemoShard& shard = memo_shard(path);
  std::lock_guard lock(shard.mu);
  if (shard.map.size() >= kMemoPerShard && !shard.map.count(path)) shard.map.clear();
  shard.map[path] = std::move(fresh);
  return out;
}

// A JSON string with no escapes inside: its text; "" for anything else.
std::string_view quoted(std::string_view item) {
  if (item.size() < 3 || item.front() != '"' || item.back() != '"') return {};
  return item.substr(1, item.size() - 2);
}

// Whether `v` is a whole number no larger than `max`.
bool whole_at_most(double v, double max) {
  return v <= max && v == std::floor(v);
}

// The largest rank a summary may name, and how many ranks it may list: a corrupt range cannot
// make a world unbounded.
constexpr double kMaxSummaryRank = 1e7;
constexpr std::size_t kMaxSummaryRanks = 1 << 20;

// "0-3 8 10-11" into `out`; false for anything else, or past `budget` ranks in all.
bool read_rank_ranges(std::string_view text, std::vector<int>& out, std::size_t budget) {
  if (text.empty()) return false;
  while (!text.empty()) {
    auto end = text.find(' ');
    auto item = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    auto dash = item.find('-');
    int from = -1, to = -1;
    auto number = [](std::string_view digits, int& v) {
      auto [stop, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      return ec == std::errc() && stop == digits.data() + digits.size() && !digits.empty() &&
             digits.front() != '-' && v <= kMaxSummaryRank;
    };
    if (!number(item.substr(0, dash), from)) return false;
    if (dash == std::string_view::npos)
      to = from;
    else if (!number(item.substr(dash + 1), to) || to < from)
      return false;
    if (static_cast<std::size_t>(to - from) + 1 > budget - std::min(budget, out.size()))
      return false;
    for (int r = from; r <= to; ++r) out.push_back(r);
  }
  return true;
}

// Whether any rank is listed twice: a list in order (as the helper writes it) needs no sort.
bool any_listed_twice(const std::vector<int>& ranks, std::vector<int>& sorted) {
  if (std::adjacent_find(ranks.begin(), ranks.end(), std::greater_equal<int>()) == ranks.end())
    return false;
  sorted.assign(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
}

// A "v":1 summary's columns, a rank each, into `windows.ranks`; why not, or "".
std::string rank_columns(const SummaryKeys& text, SummaryScratch& work, RankWindows& windows) {
  std::string why;
  const auto &host = work.host, &rank = work.rank, &now = work.now, &best = work.best;
  if (!numbers_of(text, "host", work.host, why) || !numbers_of(text, "rank", work.rank, why) ||
      !numbers_of(text, "now", work.now, why) || !numbers_of(text, "best", work.best, why))
    return why;
  if (rank.size() != host.size() || now.size() != host.size() || best.size() != host.size())
    return "\"host\", \"rank\", \"now\" and \"best\" are not of one length";
  const auto& host_at = work.host_at;
  windows.ranks.reserve(host.size());
  work.ranks.clear();
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (!whole_at_most(host[i], static_cast<double>(host_at.size()) - 1))
      return "a \"host\" index names no host";
    if (!whole_at_most(rank[i], kMaxSummaryRank)) return "a rank is not a rank";
    RankWindow w;
    w.rank = static_cast<int>(rank[i]);
    w.host = host_at[static_cast<std::size_t>(host[i])];
    w.now = now[i];
    w.best = std::min(best[i], now[i]);  // its best is never worse than now
    windows.ranks.push_back(w);
    work.ranks.push_back(w.rank);
  }
  if (any_listed_twice(work.ranks, work.sorted)) return "a rank is listed twice";
  return "";
}

// The figures every row of a "v":2 or "v":3 summary has, into its rows, whose nodes and ranks
// are set; their spread left unknown (-1). Why not, or "" ("v":3's rows also name their nodes).
std::string row_figures(const SummaryKeys& text, SummaryScratch& work, RankWindows& windows) {
  std::string why;
  const auto &slowest = work.rank, &now = work.now, &best = work.best, &peers = work.host;
  if (!numbers_of(text, "slowest", work.rank, why) || !numbers_of(text, "now", work.now, why) ||
      !numbers_of(text, "best", work.best, why) || !numbers_of(text, "peers", work.host, why))
    return why;
  const std::size_t n = windows.nodes.size();
  if (slowest.size() != n || now.size() != n || best.size() != n || peers.size() != n)
    return windows.slowest_only
               ? "\"rows\", \"slowest\", \"now\", \"best\" and \"peers\" are not of one length"
               : "\"hosts\", \"ranks\", \"slowest\", \"now\", \"best\" and \"peers\" are not "
                 "of one length";
  for (std::size_t i = 0; i < n; ++i) {
    NodeWindow& w = windows.nodes[i];
    const auto first = windows.node_ranks.begin() + w.ranks_from;
    const auto last = windows.node_ranks.begin() + w.ranks_to;
    if (!whole_at_most(slowest[i], kMaxSummaryRank) ||
        std::find(first, last, static_cast<int>(slowest[i])) == last)
      return "a \"slowest\" rank is not one of its node's ranks";
    w.slowest = static_cast<int>(slowest[i]);
    w.now = now[i];
    w.best = std::min(best[i], now[i]);  // its best is never worse than now
    w.peers = peers[i];
    w.spread = -1;
  }
  return "";
}

// A "v":2 summary's figures, a row a node; its spread for the nodes "spread_of" names. Why not,
// or "".
std::string node_figures(const SummaryKeys& text, SummaryScratch& work, RankWindows& windows) {
  const std::size_t n = windows.host_ranks.size() - 1;
  windows.nodes.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    NodeWindow& w = windows.nodes[i];
    w.host = static_cast<std::uint32_t>(i);
    w.ranks_from = windows.host_ranks[i];
    w.ranks_to = windows.host_ranks[i + 1];
  }
  std::string why = row_figures(text, work, windows);
  if (!why.empty() || !numbers_of(text, "spread_of", work.spread_of, why) ||
      !numbers_of(text, "spread", work.spread, why))
    return why;
  if (work.spread_of.size() != work.spread.size())
    return "\"spread_of\" and \"spread\" are not of one length";
  for (std::size_t i = 0; i < work.spread_of.size(); ++i) {
    if (!whole_at_most(work.spread_of[i], static_cast<double>(n) - 1))
      return "a \"spread_of\" index names no node";
    NodeWindow& w = windows.nodes[static_cast<std::size_t>(work.spread_of[i])];
    if (w.spread >= 0) return "a node's spread is given twice";
    w.spread = work.spread[i];
  }
  return "";
}

// A "v":3 summary's rows, for the nodes its "rows" names alone, each with its spread. Why not,
// or "".
std::string slowest_rows(const SummaryKeys& text, SummaryScratch& work, RankWindows& windows) {
  std::string why;
  std::vector<double>& rows = work.spread_of;
  if (!numbers_of(text, "rows", rows, why)) return why;
  const std::size_t hosts = windows.host_ranks.size() - 1;
  windows.nodes.resize(rows.size());
  work.sorted.assign(hosts, 0);  // which nodes have a row already
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!whole_at_most(rows[i], static_cast<double>(hosts) - 1))
      return "a \"rows\" index names no node";
    const auto h = static_cast<std::size_t>(rows[i]);
    if (work.sorted[h]++ > 0) return "a node's row is given twice";
    NodeWindow& w = windows.nodes[i];
    w.host = static_cast<std::uint32_t>(h);
    w.ranks_from = windows.host_ranks[h];
    w.ranks_to = windows.host_ranks[h + 1];
  }
  why = row_figures(text, work, windows);
  if (!why.empty() || !numbers_of(text, "spread", work.spread, why)) return why;
  if (work.spread.size() != rows.size()) return "\"rows\" and \"spread\" are not of one length";
  for (std::size_t i = 0; i < rows.size(); ++i) windows.nodes[i].spread = work.spread[i];
  return "";
}

// A "v":2 or "v":3 summary's figures, whose nodes and their ranks are set; why not, or "".
std::string figures(const SummaryKeys& text, SummaryScratch& work, RankWindows& windows) {
  return windows.slowest_only ? slowest_rows(text, work, windows)
                              : node_figures(text, work, windows);
}

// A "v":2 or "v":3 summary's nodes' ranks, and then its figures; why not, or "".
std::string node_rows(const SummaryKeys& text, SummaryScratch& work, RankWindows& windows) {
  const std::size_t hosts = work.names.size();
  windows.node_ranks.reserve(std::min(kMaxSummaryRanks, hosts * 8));
  windows.host_ranks.assign(1, 0);
  windows.host_ranks.reserve(hosts + 1);
  auto ranks = array_of(text, "ranks");
  if (!ranks || !each_item(*ranks, [&](std::string_view item) {
        if (windows.host_ranks.size() > hosts) return false;
        if (!read_rank_ranges(quoted(item), windows.node_ranks, kMaxSummaryRanks)) return false;
        windows.host_ranks.push_back(static_cast<std::uint32_t>(windows.node_ranks.size()));
        return true;
      }))
    return "no \"ranks\" array of rank ranges (\"0-7\"), at most " +
           std::to_string(kMaxSummaryRanks) + " ranks";
  if (windows.host_ranks.size() != hosts + 1)
    return windows.slowest_only
               ? "\"hosts\" and \"ranks\" are not of one length"
               : "\"hosts\", \"ranks\", \"slowest\", \"now\", \"best\" and \"peers\" are not "
                 "of one length";
  if (any_listed_twice(windows.node_ranks, work.sorted)) return "a rank is listed twice";
  return figures(text, work, windows);
}

// A "v":2 or "v":3 summary whose "hosts" and "ranks" arrays are the text they were in `before`,
// the same job's summary read before: its nodes and ranks are `before`'s, and only its figures
// are read.
std::string node_rows_like(const SummaryKeys& text, const RankWindows& before, SummaryScratch& work,
                           RankWindows& windows) {
  windows.hosts = before.hosts;
  windows.node_ranks = before.node_ranks;
  windows.host_ranks = before.host_ranks;
  return figures(text, work, windows);
}

}  // namespace

TimingSummary parse_timing_summary(std::string_view text, const RankWindows* before) {
  TimingSummary out;
  auto fail = [&](std::string why) {
    out = {};
    out.error = std::move(why);
    return out;
  };
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.remove_suffix(1);
  if (text.size() < 2 || text.front() != '{' || text.back() != '}')
    return fail("not a JSON object");
  const SummaryKeys keys(text);
  const double version = non_negative(keys, "v");
  if (version != 1 && version != 2 && version != 3) return fail("not version 1, 2 or 3 (\"v\":3)");
  const bool rows = version >= 2;  // a row a node, or a row for each of the slowest few
  out.windows.slowest_only = version == 3;
  double ts = non_negative(keys, "ts"), step = non_negative(keys, "step");
  double window_s = non_negative(keys, "window_s");
  if (std::isnan(ts) || std::isnan(step) || step > 9e15)
    return fail("no \"ts\" or \"step\" that is a non-negative number");
  out.ts = ts;
  out.step = static_cast<std::int64_t>(step);
  SummaryScratch& work = scratch();
  work.names.clear();
  auto host_names = array_of(keys, "hosts");
  if (rows && host_names) {
    if (auto ranks = array_of(keys, "ranks")) {
      const std::hash<std::string_view> hash;
      RankWindows::Layout& layout = out.windows.layout;
      layout = {host_names->size(), hash(*host_names), ranks->size(), hash(*ranks)};
      // The one before may be of the other form: only its nodes and ranks are taken.
      if (before && !before->host_ranks.empty() && before->layout == layout) {
        std::string why = node_rows_like(keys, *before, work, out.windows);
        if (!why.empty()) return fail(why);
        if (std::isnan(window_s)) window_s = 0;
        out.windows.window_s = window_s;
        return out;
      }
    }
  }
  if (!host_names || !each_item(*host_names, [&](std::string_view item) {
        auto name = quoted(item);
        // A node name as Slurm spells it: with no escapes, brackets or commas inside. One pass
        // over its characters: find_first_of looked each one up in the set with a memchr call,
        // half of a summary's memchr calls.
        if (name.empty() || std::any_of(name.begin(), name.end(), [](char c) {
              return c == '"' || c == '\\' || c == '[' || c == ']' || c == ',';
            }))
          return false;
        work.names.push_back(name);
        return true;
      }))
    return fail("no \"hosts\" array of node names");
  std::vector<std::string> hosts;
  std::vector<std::uint32_t>& host_at = work.host_at;  // a listed name's node
  number_hosts(work.names, work.order, host_at, hosts);
  if (rows && hosts.size() != work.names.size()) return fail("a node is listed twice");
  std::string why =
      rows ? node_rows(keys, work, out.windows) : rank_columns(keys, work, out.windows);
  if (!why.empty()) return fail(why);
  if (std::isnan(window_s)) window_s = 0;
  out.windows.window_s = window_s;
  for (auto& w : out.windows.ranks) w.window_s = window_s;
  out.windows.hosts = std::move(hosts);
  return out;
}

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
                                std::size_t max_files, double not_before, double now) {
  RankTimingRead out;
  // A large job's rank 0 writes one summary for all ranks: one file read, not one per rank.
  const std::string summary_path = dir + "/summary.json";
  MemoSeen seen = memo_seen(summary_path, now, not_before);
  if (seen.quiet) {
    out.windows = std::move(seen.windows);
    out.written = seen.ts;
    return out;
  }
  struct stat st {};
  if (::stat(summary_path.c_str(), &st) == 0) {
    if (static_cast<std::size_t>(st.st_size) > kSummaryMaxBytes) {
      out.error = summary_path + ": larger than " + std::to_string(kSummaryMaxBytes >> 20) + " MiB";
      return out;
    }
    std::shared_ptr<const RankWindows> windows;
    const FileKey file = key_of(st);
    TimingSummary summary;
    if (seen.windows && seen.file == file) {  // as it was: neither read nor parsed again
      summary.ts = seen.ts;
      summary.error = std::move(seen.error);
      windows = std::move(seen.windows);
    } else {
      std::string why;
      std::string& text = scratch().text;
      tail_into(summary_path, kSummaryMaxBytes, text, why);
      if (!why.empty()) {
        out.error = why;
        return out;
      }
      summary = parsed_summary(summary_path, file, text, now, seen, windows);
      if (text.capacity() > (1 << 20)) std::string().swap(text);  // a huge one is not held on to
    }
    if (!summary.error.empty()) {
      out.error = summary_path + ": " + summary.error;
      return out;
    }
    // One left by an earlier task says nothing of this one: the rank files, if any, are read.
    if (summary.ts >= not_before) {
      out.windows = std::move(windows);
      out.written = summary.ts;
      return out;
    }
  }
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
    out.written = std::max(out.written, s.samples.back().ts);
    out.ranks.push_back(std::move(s));
  }
  return out;
}

}  // namespace llmwatch
