#include "policy/restart_exclusion.h"

namespace llmwatch {

ExclusionChoice choose_exclusions(const std::vector<Suspect>& suspects, int spare,
                                  int max_unknown_spare) {
  ExclusionChoice out;
  size_t room = spare < 0 ? static_cast<size_t>(max_unknown_spare) : static_cast<size_t>(spare);
  for (const auto& s : suspects) {
    if (out.nodes.size() < room) {
      out.nodes.push_back(s.node);
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
