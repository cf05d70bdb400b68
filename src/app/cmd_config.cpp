// `config check` and the config loading every other command shares.
#include <cstdlib>
#include <iostream>

#include "app/commands.h"
#include "config/job_owner.h"
#include "util/identity.h"

namespace llmwatch {

std::string default_config_path() {
  if (const char* env = std::getenv("LLMWATCH_CONFIG"); env && *env) return env;
  return "/etc/llmwatch/llmwatch.toml";
}

std::optional<Config> load_or_report(const std::string& path) {
  auto result = load_config_file(path);
  apply_job_owners(result, running_as_root(), current_user_name());
  for (const auto& e : result.errors) std::cerr << e.str() << "\n";
  return result.config;
}

int cmd_config_check(const std::string& path) {
  auto config = load_or_report(path);
  if (!config) return kExitUsage;
  std::cout << path << ": ok (" << config->jobs.size() << " job(s), " << config->storage.size()
            << " storage, " << config->alerts.size() << " alert channel(s)"
            << (config->dry_run ? ", dry-run" : "") << ")\n";
  return kExitOk;
}

}  // namespace llmwatch
