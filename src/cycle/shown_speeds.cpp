#include "cycle/shown_speeds.h"

#include <mutex>
#include <unordered_map>

#include "util/json_writer.h"

namespace llmwatch {
namespace {

std::string speeds_json(const StragglerVerdict& verdict, std::size_t shown) {
  JsonWriter out;
  out.begin_array();
  for (std::size_t i = 0; i < shown && i < verdict.nodes.size(); ++i) {
    const NodeSpeed& n = verdict.nodes[i];
    out.begin_object()
        .key("node")
        .value(n.node)
        .key("relative")
        .value(n.relative)
        .key("suspect")
        .value(n.suspect)
        .end_object();
  }
  return out.end_array().take();
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
