#include "cycle/shown_speeds.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "util/json_writer.h"

namespace llmwatch {
namespace {

// A score from 0 to 1 to the hundredth, as the finding and `status` print it ("0.71×"): the
// view (and the gauge read from it) then changes when a shown speed does, not with each
// rewrite's jitter in the fourth digit, so an unchanged view is not written to the state
// again. Written by hand: to_chars and the writer's checks were most of a view's cost.
void append_hundredths(std::string& out, double score) {
  if (!std::isfinite(score)) {
    out += "null";
    return;
  }
  const long long h = std::llround(std::clamp(score, 0.0, 1e9) * 100);
  out += std::to_string(h / 100);
  if (const long long frac = h % 100; frac != 0) {
    out += '.';
    out += static_cast<char>('0' + frac / 10);
    if (frac % 10 != 0) out += static_cast<char>('0' + frac % 10);
  }
}

std::string speeds_json(const StragglerVerdict& verdict, std::size_t shown) {
  std::string out = "[";
  for (std::size_t i = 0; i < shown && i < verdict.nodes.size(); ++i) {
    const NodeSpeed& n = verdict.nodes[i];
    if (i) out += ',';
    JsonWriter name;  // a node name is the job's own writing: escaped, made valid UTF-8
    name.value(n.node);
    out += "{\"node\":";
    out += name.str();
    out += ",\"relative\":";
    append_hundredths(out, n.relative);
    out += n.suspect ? ",\"suspect\":true}" : ",\"suspect\":false}";
  }
  return out + "]";
}

}  // namespace

std::string shown_speeds_json(const std::string& job,
                              const std::shared_ptr<const StragglerVerdict>& verdict,
                              std::size_t shown) {
  struct Made {
    std::shared_ptr<const StragglerVerdict> verdict;  // held, so never a reused address
    std::size_t shown = 0;
    std::string json;
  };
  static std::mutex mu;
  static std::unordered_map<std::string, Made> made;
  if (!verdict) return "[]";
  std::lock_guard lock(mu);
  if (made.size() >= 16384 && !made.count(job)) made.clear();  // labels come and go
  Made& m = made[job];
  if (m.verdict != verdict || m.shown != shown) {  // a new entry holds no verdict: made too
    m.json = speeds_json(*verdict, shown);
    m.verdict = verdict;
    m.shown = shown;
  }
  return m.json;
}

}  // namespace llmwatch
