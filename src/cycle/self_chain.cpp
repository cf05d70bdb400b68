#include "cycle/self_chain.h"

#include <unistd.h>

#include <cstdlib>

#include "store/keys.h"
#include "store/store.h"
#include "util/identity.h"
#include "util/paths.h"

namespace llmwatch {

std::vector<std::string> self_job_args(const Config& config, const std::string& config_path,
                                       long delay_seconds) {
  const auto& s = config.self;
  std::vector<std::string> args = {"--job-name=" + s.job_name, "--dependency=singleton",
                                   "--time=" + s.time_limit, "--ntasks=1"};
  if (delay_seconds > 0) args.push_back("--begin=now+" + std::to_string(delay_seconds));
  if (!s.partition.empty()) args.push_back("--partition=" + s.partition);
  if (!s.account.empty()) args.push_back("--account=" + s.account);
  if (!s.qos.empty()) args.push_back("--qos=" + s.qos);
  args.push_back("--output=" +
                 (s.output.empty() ? config.state_dir + "/logs/llmwatch-%j.out" : s.output));
  args.push_back("--export=ALL,LLMWATCH_BIN=" + self_exe() + ",LLMWATCH_CONFIG=" + config_path);
  args.push_back(data_dir() + "/slurm/llmwatch.sbatch");
  return args;
}

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

std::optional<Finding> ensure_successor(const std::vector<SlurmJob>& queue, const Config& config,
                                        SlurmClient& slurm, Store& store, double now,
                                        bool dry_run) {
  if (store.get(kv::kSelfChain).value_or("") != "on") return std::nullopt;
  const char* own = std::getenv("SLURM_JOB_ID");
  std::string own_id = own && std::getenv("LLMWATCH_SELF_JOB") ? own : "";
  auto chain = check_chain(queue, config, own_id, current_user_name());
  // Two chains (a hand-run `submit` beside a running one, a successor queued first by a run
  // that then found another): keep the newest successor, cancel the others.
  std::vector<const SlurmJob*> pending;
  for (const auto& q : chain.mine)
    if (q.pending()) pending.push_back(&q);
  if (pending.size() > 1 && !dry_run) {
    const SlurmJob* keep = pending.front();
    for (const SlurmJob* q : pending)
      if (q->job_id > keep->job_id) keep = q;
    for (const SlurmJob* q : pending)
      if (q != keep && slurm.cancel(std::to_string(q->job_id)).empty())
        store.add_event(now, "self", "llmwatch", "info",
                        "cancelled duplicate llmwatch job " + std::to_string(q->job_id) +
                            "; the chain goes on with " + std::to_string(keep->job_id));
    chain.successor = *keep;
  }
  if (chain.successor) {
    store.put(kv::kSelfSuccessor, std::to_string(chain.successor->job_id), now);
    return std::nullopt;
  }
  if (chain.other_running) return std::nullopt;  // that run queues the successor itself

  Finding f;
  f.key = "llmwatch/successor";
  f.kind = "successor-missing";
  f.subject = "llmwatch";
  f.severity = Severity::Warning;
  long delay = static_cast<long>(std::stol(
      store.get(kv::kSelfInterval).value_or(std::to_string(config.self.interval.count()))));
  if (dry_run) {
    store.add_event(now, "self", "llmwatch", "info", "dry-run: would queue the next llmwatch job");
    return std::nullopt;
  }
  std::string config_path = store.get(kv::kSelfConfig).value_or(config.path);
  auto args = self_job_args(config, config_path, delay);
  auto submitted = slurm.submit(args, {}, true);
  if (!submitted.job_id)
    submitted = slurm.submit(args, {}, true);  // once more: a busy controller times out
  if (!submitted.job_id) {
    f.severity = Severity::Critical;
    f.summary = "could not queue the next llmwatch job; the watchdog chain will stop";
    f.evidence.push_back(submitted.error);
    store.add_event(now, "self", "llmwatch", "critical",
                    "sbatch of successor failed: " + submitted.error);
    return f;
  }
  store.put(kv::kSelfSuccessor, std::to_string(*submitted.job_id), now);
  // Queuing the successor is routine inside the chain; outside it, the chain had broken.
  std::string how = own_id.empty() ? "the llmwatch chain had no queued job; re-queued it as "
                                   : "queued the next llmwatch job: ";
  store.add_event(now, "self", "llmwatch", own_id.empty() ? "warning" : "info",
                  how + std::to_string(*submitted.job_id));
  if (own_id.empty()) {
    f.summary = "the llmwatch chain had no queued successor; re-queued as job " +
                std::to_string(*submitted.job_id);
    return f;
  }
  return std::nullopt;
}

SubmitResult queue_successor_first(const Config& config, const std::string& config_path,
                                   long delay_seconds, SlurmClient& slurm) {
  auto args = self_job_args(config, config_path, delay_seconds);
  auto submitted = slurm.submit(args, {}, true);
  if (!submitted.job_id) submitted = slurm.submit(args, {}, true);  // a busy controller
  return submitted;
}

}  // namespace llmwatch
