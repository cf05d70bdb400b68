#include "probes/megatron_rank_times.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "util/strings.h"

namespace llmwatch {
namespace {

// A launcher's prefix ("[default3]:", "[rank3]:"), through its last "]:"; "" when none.
std::string_view prefix_of(std::string_view line) {
  auto at = line.rfind("]:");
  return at == std::string_view::npos ? std::string_view() : line.substr(0, at + 2);
}

// "rank 12: 612.31" -> (12, 612.31); anything else -> false.
bool rank_line(std::string_view s, int& rank, double& ms) {
  if (s.substr(0, 5) != "rank ") return false;
  s = trim(s.substr(5));
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), rank);
  if (ec != std::errc() || rank < 0 || p == s.data() + s.size() || *p != ':') return false;
  s = trim(s.substr(static_cast<std::size_t>(p - s.data()) + 1));
  auto [q, ec2] = std::from_chars(s.data(), s.data() + s.size(), ms);
  return ec2 == std::errc() && q == s.data() + s.size() && std::isfinite(ms) && ms >= 0;
}

// "forward-compute:" -> "forward-compute": a timer's name, no spaces, ends in ':'.
bool timer_line(std::string_view s, std::string_view& name) {
  if (s.size() < 2 || s.back() != ':') return false;
  name = s.substr(0, s.size() - 1);
  return name.find(' ') == std::string_view::npos;
}

}  // namespace

void MegatronRankTimes::feed(std::string_view line) {
  const std::string_view prefix = prefix_of(line);
  std::string_view s = trim(line.substr(prefix.size()));
  if (s == "times across ranks (ms):") {
    end_block();
    in_block_ = true;
    prefix_.assign(prefix);
    return;
  }
  if (!in_block_) return;
  // Another process's line between two of the block's (torchrun --tee puts every rank's output
  // in one file, each line prefixed): not the block's, and not its end.
  if (prefix != prefix_) return;
  int rank = 0;
  double ms = 0;
  std::string_view name;
  if (rank_line(s, rank, ms)) {
    if (compute_timer_ && rank < kMaxRank) current_[rank] += ms / 1000;
  } else if (timer_line(s, name)) {
    compute_timer_ = name == "forward-compute" || name == "backward-compute";
    saw_compute_ |= compute_timer_;
  } else {
    end_block();
  }
}

void MegatronRankTimes::end_block() {
  if (!in_block_) return;
  ++seq_;
  if (saw_compute_ && !current_.empty())
    done_.push_back({seq_, std::move(current_)});
  else
    ++without_compute_;
  current_.clear();
  in_block_ = compute_timer_ = saw_compute_ = false;
}

std::vector<RankTimesBlock> MegatronRankTimes::take() {
  std::vector<RankTimesBlock> out;
  out.swap(done_);
  return out;
}

void LogRankTimes::keep_taken(double written) {
  const std::size_t at_most = from_rank_lines() ? kLineStepsKept : kLogBlocksKept;
  keep(parser.take(), written, at_most);
  keep(lines.take(), written, at_most);
}

void LogRankTimes::keep(std::vector<RankTimesBlock> fresh, double written, std::size_t at_most) {
  for (auto& b : fresh) blocks.emplace_back(written, std::move(b));
  if (blocks.size() > at_most)
    blocks.erase(blocks.begin(), blocks.end() - static_cast<std::ptrdiff_t>(at_most));
}

namespace {

double to_ms(double s) {
  return std::round(s * 1e5) / 100;
}

// Every rank from 0 (the usual block): {"ms":[ms0, ms1, ...]}; else flat pairs, [rank, ms, rank,
// ms, ...]. A pair per rank as an array of its own made the record twice as slow to write and
// read, and the rank numbers of a whole block were a third of it (bench/straggler_bench.cpp).
nlohmann::json ranks_json(const std::map<int, double>& compute_s) {
  auto out = nlohmann::json::array();
  const bool dense = !compute_s.empty() && compute_s.begin()->first == 0 &&
                     compute_s.rbegin()->first + 1 == static_cast<int>(compute_s.size());
  out.get_ref<nlohmann::json::array_t&>().reserve((dense ? 1 : 2) * compute_s.size());
  for (const auto& [rank, s] : compute_s) {
    if (!dense) out.push_back(rank);
    out.push_back(to_ms(s));
  }
  if (dense) return {{"ms", std::move(out)}};
  return out;
}

bool one_rank(std::int64_t rank, const nlohmann::json& ms_json, std::map<int, double>& out) {
  if (!ms_json.is_number()) return false;
  double ms = ms_json.get<double>();
  if (rank < 0 || rank >= kMaxLogRank || !std::isfinite(ms) || ms < 0) return false;
  out.emplace_hint(out.end(), static_cast<int>(rank), ms / 1000);
  return true;
}

// Either form back; false on anything else.
bool ranks_from(const nlohmann::json& j, std::map<int, double>& out) {
  if (j.is_object()) {
    if (j.size() != 1 || !j.contains("ms") || !j["ms"].is_array()) return false;
    const auto& ms = j["ms"];
    for (std::size_t i = 0; i < ms.size(); ++i)
      if (!one_rank(static_cast<std::int64_t>(i), ms[i], out)) return false;
    return true;
  }
  if (!j.is_array() || j.size() % 2 != 0) return false;
  for (std::size_t i = 0; i < j.size(); i += 2)
    if (!j[i].is_number_integer() || !one_rank(j[i].get<std::int64_t>(), j[i + 1], out))
      return false;
  return true;
}

}  // namespace

std::string LogRankTimes::to_json() const {
  nlohmann::json j;
  j["v"] = 1;
  j["task"] = task;
  const MegatronRankTimes& p = parser;
  j["parser"] = {{"in_block", p.in_block_},
                 {"prefix", p.prefix_},
                 {"compute_timer", p.compute_timer_},
                 {"saw_compute", p.saw_compute_},
                 {"seq", p.seq_},
                 {"without_compute", p.without_compute_},
                 {"current", ranks_json(p.current_)}};
  const RankLineTimes& l = lines;
  auto open = nlohmann::json::array();
  for (const auto& [step, ranks] : l.open_) open.push_back({step, ranks_json(ranks)});
  j["lines"] = {{"taken_upto", l.taken_upto_},
                {"world", l.world_},
                {"without_unit", l.without_unit_},
                {"kept", l.kept_},
                {"open", std::move(open)}};
  auto list = nlohmann::json::array();
  for (const auto& [written, b] : blocks)
    list.push_back({{"written", written}, {"seq", b.seq}, {"ranks", ranks_json(b.compute_s)}});
  j["blocks"] = std::move(list);
  j["read_to"] = read_to;
  return j.dump();
}

bool LogRankTimes::holds_cut() const {
  return parser.in_block_ || !lines.open_.empty();
}

void LogRankTimes::drop_cut() {
  parser.in_block_ = false;
  parser.prefix_.clear();
  parser.compute_timer_ = false;
  parser.current_.clear();
  lines.open_.clear();
}

std::optional<LogRankTimes> LogRankTimes::from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  // Checked before any value() is taken: value() throws on a key of another type ({"v":[1]},
  // found by fuzz.rank_timing).
  if (!j.is_object() || !j.contains("v") || !j["v"].is_number_integer() || j["v"] != 1 ||
      !j.contains("task") || !j["task"].is_string())
    return std::nullopt;
  const auto& p = j.value("parser", nlohmann::json::object());
  const auto& list = j.value("blocks", nlohmann::json::array());
  if (!p.is_object() || !list.is_array()) return std::nullopt;
  LogRankTimes out;
  out.task = j["task"].get<std::string>();
  // Records saved before it was kept have none: 0, which no read matches.
  if (j.contains("read_to") && j["read_to"].is_number_unsigned())
    out.read_to = j["read_to"].get<std::uint64_t>();
  try {
    MegatronRankTimes& m = out.parser;
    m.in_block_ = p.at("in_block").get<bool>();
    m.prefix_ = p.contains("prefix") ? p.at("prefix").get<std::string>() : std::string();
    m.compute_timer_ = p.at("compute_timer").get<bool>();
    m.saw_compute_ = p.at("saw_compute").get<bool>();
    m.seq_ = p.at("seq").get<std::int64_t>();
    m.without_compute_ = p.at("without_compute").get<int>();
    if (!ranks_from(p.at("current"), m.current_)) return std::nullopt;
    // Records written before rank lines were read have none.
    if (j.contains("lines")) {
      const auto& l = j["lines"];
      RankLineTimes& r = out.lines;
      r.taken_upto_ = l.at("taken_upto").get<std::int64_t>();
      r.world_ = l.at("world").get<std::size_t>();
      r.without_unit_ = l.at("without_unit").get<int>();
      r.kept_ = l.at("kept").get<std::int64_t>();
      const auto& open = l.at("open");
      if (!open.is_array() || open.size() > RankLineTimes::kOpenSteps + 1) return std::nullopt;
      for (const auto& e : open) {
        if (!e.is_array() || e.size() != 2) return std::nullopt;
        if (!ranks_from(e[1], r.open_[e[0].get<std::int64_t>()])) return std::nullopt;
      }
    }
    for (const auto& e : list) {
      RankTimesBlock b;
      b.seq = e.at("seq").get<std::int64_t>();
      double written = e.at("written").get<double>();
      if (!std::isfinite(written) || !ranks_from(e.at("ranks"), b.compute_s)) return std::nullopt;
      out.blocks.emplace_back(written, std::move(b));
    }
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return out;
}

namespace {
std::mutex kept_mu;
std::unordered_map<std::string, std::shared_ptr<LogRankTimes>> kept;
}  // namespace

std::shared_ptr<LogRankTimes> take_log_rank_times(const std::string& key) {
  std::lock_guard lock(kept_mu);
  auto it = kept.find(key);
  if (it == kept.end() || !it->second) return nullptr;
  auto out = std::move(it->second);
  kept.erase(it);
  return out;
}

void put_log_rank_times(const std::string& key, std::shared_ptr<LogRankTimes> state) {
  std::lock_guard lock(kept_mu);
  // Bounded: jobs that left (and their old tasks) are forgotten together, now and then.
  if (kept.size() >= 4096) kept.clear();
  kept[key] = std::move(state);
}

RankTimingRead rank_timing_from_blocks(const LogRankTimes& state,
                                       const std::vector<std::string>& hosts) {
  RankTimingRead out;
  out.window = state.from_rank_lines() ? kLineStepsJudged : kLogBlocksJudged;
  out.placed_by_layout = true;
  if (!state.blocks.empty())
    out.version = state.task + "#" + std::to_string(state.blocks.back().second.seq);
  int world = 0;
  std::size_t widest = 0;  // the most ranks one block names
  for (const auto& [written, b] : state.blocks) {
    if (!b.compute_s.empty()) world = std::max(world, b.compute_s.rbegin()->first + 1);
    widest = std::max(widest, b.compute_s.size());
    out.written = std::max(out.written, written);
  }
  if (state.blocks.empty()) {
    if (state.parser.blocks_without_compute() > 0)
      out.error =
          "Megatron printed its per-rank timers without forward-compute or "
          "backward-compute: set --timing-log-level 2 (with --timing-log-option all)";
    else if (state.lines.lines_without_unit() > 0)
      out.error =
          "the ranks' own lines name a compute time without its unit (\"compute 0.61 s\", "
          "\"compute_ms=612\"): not read";
    return out;
  }
  const char* source = state.from_rank_lines() ? "the ranks' own lines" : "Megatron's timers";
  // Every rank prints; a world most of which no block names is a line misread
  // ("rank 900000: ..."), not a job of that size.
  if (widest * 2 < static_cast<std::size_t>(world)) {
    out.error = std::string(source) + " name rank " + std::to_string(world - 1) + " but at most " +
                std::to_string(widest) + " ranks in one interval: not judged";
    return out;
  }
  const int nodes = static_cast<int>(hosts.size());
  if (nodes == 0 || world % nodes != 0) {
    out.error = std::string(source) + " name " + std::to_string(world) + " ranks over " +
                std::to_string(nodes) + " nodes: not one block of ranks per node, so no rank " +
                "can be placed on its node";
    return out;
  }
  const int per_node = world / nodes;
  out.ranks.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    out.ranks[static_cast<std::size_t>(r)].rank = r;
    out.ranks[static_cast<std::size_t>(r)].host = hosts[static_cast<std::size_t>(r / per_node)];
  }
  for (const auto& [written, b] : state.blocks)
    for (const auto& [rank, s] : b.compute_s)
      out.ranks[static_cast<std::size_t>(rank)].samples.push_back({b.seq, written, s, 0});
  return out;
}

}  // namespace llmwatch
