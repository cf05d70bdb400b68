#include "probes/job_logs.h"

#include <glob.h>

#include <algorithm>

namespace llmwatch {

std::vector<std::string> log_patterns_for(const JobSettings& job, const SlurmJob& task) {
  if (job.logs.empty()) return {job_stdout_path(task)};
  std::vector<std::string> out;
  for (const auto& pattern : job.logs) out.push_back(expand_slurm_pattern(pattern, task));
  return out;
}

std::vector<std::string> glob_logs(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const auto& expanded : patterns) {
    // A plain path is taken as it is: glob would only stat it (and unescape backslashes).
    if (expanded.find_first_of("*?[") == std::string::npos) {
      out.push_back(expanded);  // not there yet: reading it reports that
      continue;
    }
    glob_t g{};
    if (::glob(expanded.c_str(), GLOB_NOSORT, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    globfree(&g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> log_paths_for(const JobSettings& job, const SlurmJob& task) {
  return glob_logs(log_patterns_for(job, task));
}

}  // namespace llmwatch
