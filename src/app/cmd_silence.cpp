// `silence add|list|remove`: mute notifications for findings matching a key or glob for a
// while. Findings are still recorded and actions still run; only the messages stop.
#include <iostream>

#include "app/commands.h"
#include "cycle/self_chain.h"
#include "cycle/supervisor.h"
#include "store/alert_journal.h"
#include "util/identity.h"

namespace llmwatch {

int cmd_silence(const Config& config, const std::string& verb, const std::string& pattern,
                const std::string& duration, const std::string& reason, std::int64_t id) {
  try {
    Store store(config.state_dir);
    AlertJournal journal(store);
    double now = unix_now();
    if (verb == "add") {
      auto d = parse_duration(duration);
      if (!d || d->count() <= 0) {
        std::cerr << "llmwatch silence add: --for: " << (d ? "must be positive" : d.error())
                  << "\n";
        return kExitUsage;
      }
      auto new_id = journal.add_silence(pattern, now + static_cast<double>(d->count()), reason,
                                        current_user_name(), now);
      store.add_event(now, "silence", pattern, "info",
                      current_user_name() + " silenced " + pattern + " for " + format_duration(*d) +
                          ": " + reason);
      std::cout << "silence #" << new_id << ": " << pattern << " for " << format_duration(*d)
                << "\n";
      return kExitOk;
    }
    if (verb == "remove") {
      if (!journal.remove_silence(id)) {
        std::cerr << "llmwatch silence remove: no silence #" << id << "\n";
        return kExitUsage;
      }
      store.add_event(now, "silence", "#" + std::to_string(id), "info",
                      current_user_name() + " removed silence #" + std::to_string(id));
      std::cout << "removed silence #" << id << "\n";
      return kExitOk;
    }
    for (const auto& s : journal.silences(now))
      std::cout << "#" << s.id << "  " << s.pattern << "  for another "
                << format_duration(Seconds(static_cast<long long>(s.until - now))) << "  by "
                << s.created_by << ": " << s.reason << "\n";
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch
