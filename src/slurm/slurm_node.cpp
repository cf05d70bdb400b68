#include "slurm/slurm_node.h"

#include <algorithm>
#include <nlohmann/json.hpp>

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

bool SlurmNode::idle() const {
  return state == "idle" || state == "IDLE";
}

std::string SlurmNode::describe() const {
  std::string out = state;
  for (const auto& f : flags) out += "+" + f;
  return out;
}

// parse_sinfo_json: slurm_json_fast.cpp (simdjson on demand).

ReasonBy reason_by(const std::string& reason) {
  if (reason.empty() || reason == "(null)" || reason == "none") return ReasonBy::Nobody;
  return reason.rfind(kOwnReasonPrefix, 0) == 0 ? ReasonBy::Llmwatch : ReasonBy::Someone;
}

bool undrain_allowed(const std::string& reason, bool kill_task_failed_too) {
  if (reason_by(reason) == ReasonBy::Llmwatch) return true;
  return kill_task_failed_too && reason.rfind("Kill task failed", 0) == 0;
}

bool undrain_allowed(const SlurmNode& node, bool kill_task_failed_too) {
  return (node.drained() || node.down()) && undrain_allowed(node.reason, kill_task_failed_too);
}

std::map<std::string, std::string> nodes_by_address(
    const std::vector<std::pair<std::string, std::string>>& node_addrs) {
  std::map<std::string, std::vector<std::string>> nodes_at;
  for (const auto& [node, addr] : node_addrs)
    if (!addr.empty() && addr != node) nodes_at[addr].push_back(node);
  std::map<std::string, std::string> out;
  for (const auto& [addr, at] : nodes_at)
    if (at.size() == 1) out[addr] = at.front();
  return out;
}

}  // namespace llmwatch
