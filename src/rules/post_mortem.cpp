#include "rules/post_mortem.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>

#include "probes/gpu/xid_line.h"
#include "util/text.h"

namespace llmwatch {

namespace {

EndClass class_named(const std::string& name) {
  for (auto c : {EndClass::Completed, EndClass::Cancelled, EndClass::Timeout, EndClass::NodeFailure,
                 EndClass::Preempted, EndClass::OutOfMemory, EndClass::Network, EndClass::GpuError,
                 EndClass::Software, EndClass::SilentFailure})
    if (name == end_class_name(c)) return c;
  return EndClass::Unknown;
}

}  // namespace

PostMortem make_post_mortem(const std::string& task, std::int64_t task_start,
                            const std::string& nodes, int node_count, const std::string& partition,
                            const EndEvidence& evidence, const TaskLayout& layout,
                            const std::vector<NodeTrouble>& troubles, double now) {
  PostMortem p;
  p.task = task;
  p.task_start = task_start;
  p.task_end = evidence.end_time;
  p.nodes = nodes;
  p.node_count = node_count;
  p.partition = partition;
  p.verdict = classify_end(evidence);
  p.made = now;
  if (may_be_hardware(p.verdict.cls))
    p.suspects = attribute_crash(evidence.log_tail, layout, troubles);
  return p;
}

namespace {

// The Xid number in "Xid 79 GPU 3: ..." (a node report's summary) or in a kernel line
// "NVRM: Xid (PCI:0000:10:1c): 79, ..."; 0 when none.
int xid_named(const std::string& line) {
  if (auto event = parse_xid_line(line)) return event->xid;
  auto at = line.find("Xid ");
  if (at == std::string::npos) return 0;
  int xid = 0;
  auto digits = std::string_view(line).substr(at + 4);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), xid);
  return ec == std::errc() && end != digits.data() && xid > 0 ? xid : 0;
}

}  // namespace

std::string ledger_cause(const PostMortem& p) {
  if (p.verdict.cls == EndClass::GpuError) {
    std::vector<const std::vector<std::string>*> sources = {&p.verdict.evidence};
    for (const auto& s : p.suspects) sources.push_back(&s.why);
    for (const auto* lines : sources)
      for (const auto& line : *lines)
        if (int xid = xid_named(line)) return "Xid " + std::to_string(xid);
  }
  return end_class_name(p.verdict.cls);
}

std::string PostMortem::to_json() const {
  nlohmann::json j = {{"task", task},
                      {"task_start", task_start},
                      {"task_end", task_end},
                      {"nodes", nodes},
                      {"node_count", node_count},
                      {"partition", partition},
                      {"class", end_class_name(verdict.cls)},
                      {"summary", verdict.summary},
                      {"evidence", verdict.evidence},
                      {"made", made},
                      {"suspects", nlohmann::json::array()}};
  if (node_check_pending) j["node_check_pending"] = true;
  for (const auto& s : suspects)
    j["suspects"].push_back({{"node", s.node}, {"confidence", s.confidence}, {"why", s.why}});
  return json_dump(j);
}

std::optional<PostMortem> PostMortem::from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("task")) return std::nullopt;
  try {
    PostMortem p;
    p.task = j.value("task", "");
    p.task_start = j.value("task_start", std::int64_t{0});
    p.task_end = j.value("task_end", std::int64_t{0});
    p.nodes = j.value("nodes", "");
    p.node_count = j.value("node_count", 0);
    p.partition = j.value("partition", "");
    p.verdict.cls = class_named(j.value("class", ""));
    p.verdict.summary = j.value("summary", "");
    p.verdict.evidence = j.value("evidence", std::vector<std::string>{});
    p.made = j.value("made", 0.0);
    p.node_check_pending = j.value("node_check_pending", false);
    for (const auto& s : j.value("suspects", nlohmann::json::array()))
      p.suspects.push_back({s.value("node", ""), s.value("confidence", 0.0),
                            s.value("why", std::vector<std::string>{})});
    return p;
  } catch (const std::exception&) {
    return std::nullopt;  // a record of an older shape: made again
  }
}

}  // namespace llmwatch
