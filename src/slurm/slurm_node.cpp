#include "slurm/slurm_node.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "slurm/slurm_json.h"

namespace llmwatch {

bool SlurmNode::drained() const {
  return std::find(flags.begin(), flags.end(), "DRAIN") != flags.end();
}

bool SlurmNode::down() const {
  auto has = [this](const char* f) {
    return std::find(flags.begin(), flags.end(), f) != flags.end();
  };
  return state == "down" || state == "fail" || state == "DOWN" || state == "FAIL" ||
         has("NOT_RESPONDING") || has("DOWN") || has("FAIL");
}

std::string SlurmNode::describe() const {
  std::string out = state;
  for (const auto& f : flags) out += "+" + f;
  return out;
}

SinfoParse parse_sinfo_json(std::string_view text) {
  SinfoParse out;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (auto error = slurm_json_error(doc, "nodes"); !error.empty()) return out.error = error, out;
  for (const auto& n : doc["nodes"]) {
    if (!n.is_object()) continue;
    SlurmNode node;
    node.name = json_string(n, "name");
    // 22.05: "state": "idle" plus "state_flags": ["DRAIN"]; 23.02+: "state": ["IDLE", "DRAIN"].
    if (auto it = n.find("state"); it != n.end() && it->is_array()) {
      for (const auto& s : *it)
        if (s.is_string()) {
          std::string v = s.get<std::string>();
          if (node.state.empty()) {
            std::transform(v.begin(), v.end(), v.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            node.state = v;
          } else {
            node.flags.push_back(v);
          }
        }
    } else {
      node.state = json_string(n, "state");
    }
    if (auto it = n.find("state_flags"); it != n.end() && it->is_array())
      for (const auto& f : *it)
        if (f.is_string()) node.flags.push_back(f.get<std::string>());
    node.reason = json_string(n, "reason");
    node.reason_set_by = json_string(n, "reason_set_by_user");
    if (auto it = n.find("partitions"); it != n.end() && it->is_array())
      for (const auto& p : *it)
        if (p.is_string()) node.partitions.push_back(p.get<std::string>());
    if (!node.name.empty()) out.nodes.push_back(std::move(node));
  }
  return out;
}

}  // namespace llmwatch
