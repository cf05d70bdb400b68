// `submit`: start the self-perpetuating chain, unless one is already queued or running.
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "cycle/self_chain.h"
#include "cycle/supervisor.h"
#include "store/keys.h"
#include "store/store.h"
#include "util/identity.h"

namespace llmwatch {

int cmd_submit(const Config& config, const std::string& interval_text) {
  Seconds interval = config.self.interval;
  if (!interval_text.empty()) {
    auto parsed = parse_duration(interval_text);
    if (!parsed || parsed->count() < 1) {
      std::cerr << "llmwatch submit: --interval: "
                << (parsed ? "must be at least 1s" : parsed.error()) << "\n";
      return kExitUsage;
    }
    interval = *parsed;
  }
  try {
    Store store(config.state_dir);
    std::filesystem::create_directories(config.state_dir + "/logs");
    SlurmClient slurm(config.slurm);
    auto queue = slurm.queue();
    if (!queue.ok()) {
      std::cerr << "llmwatch submit: " << queue.error << "\n";
      return kExitFailure;
    }
    double now = unix_now();
    std::string config_path = std::filesystem::absolute(config.path).string();
    store.put(kv::kSelfInterval, std::to_string(interval.count()), now);
    store.put(kv::kSelfConfig, config_path, now);
    store.put(kv::kSelfChain, "on", now);
    auto chain = check_chain(queue.jobs, config, "", current_user_name());
    if (!chain.mine.empty()) {
      std::cout << "llmwatch chain already active: job " << chain.mine.front().display_id() << " ("
                << chain.mine.front().state << "); not submitting another\n";
      return kExitOk;
    }
    auto submitted = slurm.submit(self_job_args(config, config_path, 0), {}, true);
    if (!submitted.job_id) {
      std::cerr << "llmwatch submit: " << submitted.error << "\n";
      return kExitFailure;
    }
    store.put(kv::kSelfSuccessor, std::to_string(*submitted.job_id), now);
    store.add_event(now, "self", "llmwatch", "info",
                    "chain started: job " + std::to_string(*submitted.job_id));
    std::cout << "submitted llmwatch job " << *submitted.job_id << "; it re-queues itself every "
              << format_duration(interval) << "\n";
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch
