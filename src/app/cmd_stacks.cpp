// `llmwatch stacks --job J`: runs on a compute node (the `dump` action starts it on every node
// of a hung job with srun --overlap) and prints the Python stacks of the job's processes
// there, one block per process. Always exits 0: what could not be dumped says so in its block.
#include <cstdlib>
#include <future>
#include <iostream>
#include <map>

#include "app/commands.h"
#include "probes/python_stacks.h"
#include "util/paths.h"

namespace llmwatch {

int cmd_stacks(const std::string& job_id, double timeout_seconds) {
  std::string node;
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) node = n;
  if (node.empty()) node = hostname().substr(0, hostname().find('.'));
  auto timeout = Seconds(static_cast<long long>(timeout_seconds));
  // Every rank at once: 8 ranks of a node, dumped one by one, would take 8 deadlines. Each
  // rank's flight recorder is fired first, where the job configured one.
  std::vector<std::future<ProcessStack>> pending;
  for (int pid : job_python_processes(job_id, node))
    pending.push_back(std::async(std::launch::async, rank_forensics, pid, timeout));
  std::vector<ProcessStack> stacks;
  for (auto& p : pending) {
    stacks.push_back(p.get());
    stacks.back().node = node;
  }
  if (stacks.empty())
    std::cout << "=== llmwatch-stack node=" << node << " pid=0 comm=none ===\n"
              << "no Python process of job " << job_id << " on " << node << "\n";
  std::cout << format_stacks(stacks) << std::flush;
  return kExitOk;
}

}  // namespace llmwatch
