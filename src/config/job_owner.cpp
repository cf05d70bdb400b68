#include "config/job_owner.h"

namespace llmwatch {

void apply_job_owners(ConfigResult& result, bool as_root, const std::string& me) {
  if (!result.config) return;
  Config& c = *result.config;
  for (auto& job : c.jobs) {
    if (job.id || !job.user.empty()) continue;
    if (as_root || me.empty()) {
      result.errors.push_back(
          {c.path, job.line,
           "[[job]] '" + job.name +
               "' needs user = \"...\": llmwatch runs as root and would otherwise act on "
               "anyone's job of that name"});
      continue;
    }
    job.user = me;
  }
  if (!result.errors.empty()) result.config.reset();
}

}  // namespace llmwatch
