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

std::string SlurmNode::describe() const {
  std::string out = state;
  for (const auto& f : flags) out += "+" + f;
  return out;
}

// parse_sinfo_json: slurm_json_fast.cpp (simdjson on demand).

}  // namespace llmwatch
