#include "probes/job_logs.h"

#include <glob.h>

#include <algorithm>

namespace llmwatch {

std::vector<std::string> log_paths_for(const JobSettings& job, const SlurmJob& task) {
  if (job.logs.empty()) return {job_stdout_path(task)};
  std::vector<std::string> out;
  for (const auto& pattern : job.logs) {
    std::string expanded = expand_slurm_pattern(pattern, task);
    glob_t g{};
    if (::glob(expanded.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    } else if (expanded.find_first_of("*?[") == std::string::npos) {
      out.push_back(expanded);  // not there yet: reading it reports that
    }
    globfree(&g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace llmwatch
