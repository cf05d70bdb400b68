#pragma once
// The kinds of a list of findings, for compact assertions.
#include <string>
#include <vector>

#include "rules/finding.h"

namespace llmwatch::testing {

inline std::vector<std::string> kinds(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.kind);
  return out;
}

}  // namespace llmwatch::testing
