#include "cycle/self_chain.h"

namespace llmwatch {

ChainCheck check_chain(const std::vector<SlurmJob>& queue, const Config& config,
                       const std::string& own_job_id, const std::string& user) {
  ChainCheck c;
  for (const auto& q : queue) {
    if (q.name != config.self.job_name || q.user != user) continue;
    if (std::to_string(q.job_id) == own_job_id) continue;
    if (q.pending()) {
      c.mine.push_back(q);
      if (!c.successor) c.successor = q;
    } else if (q.running()) {
      c.mine.push_back(q);
      c.other_running = true;
    }
  }
  return c;
}

SubmitResult queue_successor_first(const Config& config, const std::string& config_path,
                                   long delay_seconds, SlurmClient& slurm) {
  auto args = self_job_args(config, config_path, delay_seconds);
  auto submitted = slurm.submit(args, {}, true);
  if (!submitted.job_id) submitted = slurm.submit(args, {}, true);  // a busy controller
  return submitted;
}

}  // namespace llmwatch
