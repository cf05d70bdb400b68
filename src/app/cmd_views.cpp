// `status` and `events`: read-only views of the state store.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "cycle/supervisor.h"
#include "store/store.h"
#include "rules/job_rules.h"
#include "views/job_view.h"
#include "views/status_view.h"

namespace llmwatch {

static bool use_color() { return isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR"); }

int cmd_status(const Config& config, bool json) {
  try {
    Store store(config.state_dir);
    auto s = build_status(config, store, unix_now());
    if (json) std::cout << s.dump(2) << "\n";
    else std::cout << render_status(s, use_color());
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

int cmd_job_view(const Config& config, const std::string& label, bool json) {
  for (const auto& job : config.jobs) {
    if (job_label(job) != label) continue;
    try {
      Store store(config.state_dir);
      auto j = build_job(job, store, unix_now());
      if (json) std::cout << j.dump(2) << "\n";
      else std::cout << render_job(j, use_color());
      return kExitOk;
    } catch (const std::exception& e) {
      std::cerr << "llmwatch: " << e.what() << "\n";
      return kExitFailure;
    }
  }
  std::cerr << "llmwatch job: '" << label << "' is not a [[job]] in " << config.path << "\n";
  return kExitUsage;
}

int cmd_events(const Config& config, const std::string& since, const std::string& job, bool json) {
  std::string why;
  auto window = parse_duration(since, &why);
  if (!window) {
    std::cerr << "llmwatch events: --since: " << why << "\n";
    return kExitUsage;
  }
  try {
    Store store(config.state_dir);
    double now = unix_now();
    for (const auto& e : store.events(now - static_cast<double>(window->count()), job, 100000)) {
      if (json) {
        std::cout << nlohmann::json{{"ts", e.ts}, {"kind", e.kind}, {"subject", e.subject}, {"severity", e.severity},
                                    {"message", e.message}}
                         .dump()
                  << "\n";
        continue;
      }
      char buf[32];
      std::time_t t = static_cast<std::time_t>(e.ts);
      std::tm tm{};
      localtime_r(&t, &tm);
      std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
      std::cout << buf << "  " << e.severity << "  " << e.kind << "  " << e.subject << "  " << e.message << "\n";
    }
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "llmwatch: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace llmwatch
