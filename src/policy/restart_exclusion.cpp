#include "policy/restart_exclusion.h"

#include <algorithm>

namespace llmwatch {

ExclusionChoice choose_exclusions(const std::vector<Suspect>& suspects, int spare,
                                  const std::vector<std::string>& avoided, int max_unknown_spare) {
  ExclusionChoice out;
  size_t room = spare < 0 ? static_cast<size_t>(max_unknown_spare) : static_cast<size_t>(spare);
  size_t taken = 0;
  for (const auto& s : suspects) {
    if (std::find(avoided.begin(), avoided.end(), s.node) != avoided.end()) {
      out.nodes.push_back(s.node);
      continue;
    }
    if (taken < room) {
      out.nodes.push_back(s.node);
      ++taken;
      continue;
    }
    out.note += (out.note.empty() ? "" : ", ") + s.node;
  }
  if (!out.note.empty())
    out.note = "not excluded (the run would no longer fit" +
               std::string(spare < 0 ? ", partition size unknown" : "") + "): " + out.note;
  return out;
}

}  // namespace llmwatch
