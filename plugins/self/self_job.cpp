#include "self/self_job.h"

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

}  // namespace llmwatch
