#include "slurm/slurm_snapshot.h"

namespace llmwatch {

EndsLearned settle_ended(SlurmSnapshot& snapshot, SlurmClient& slurm,
                         const std::vector<std::string>& ids) {
  EndsLearned out;
  if (!snapshot.queue) return out;
  for (const auto& id : ids) {
    auto shown = slurm.show_job(id);
    auto state = shown.find("JobState");
    if (state == shown.end() || state->second.empty()) {  // forgotten, or no answer
      ++out.unanswered;
      continue;
    }
    SlurmJob now;
    now.state = state->second;
    if (now.running() || now.pending() || now.paused()) continue;
    bool marked = false;
    for (auto& j : snapshot.queue->jobs)
      if (j.display_id() == id && j.running()) {
        j.state = now.state;
        marked = true;
      }
    out.ended += marked;
  }
  return out;
}

}  // namespace llmwatch
