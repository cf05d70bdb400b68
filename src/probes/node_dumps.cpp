#include "probes/node_dumps.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>

namespace llmwatch {

std::vector<int> ranks_first(const std::vector<RankProcess>& processes) {
  std::vector<int> out = own_rank_pids(processes);
  for (const auto& p : processes)
    if (std::find(out.begin(), out.end(), p.pid) == out.end()) out.push_back(p.pid);
  return out;
}

std::vector<ProcessStack> dump_bounded(const std::vector<int>& pids, std::size_t parallel,
                                       Seconds deadline,
                                       const std::function<ProcessStack(int)>& dump) {
  std::vector<ProcessStack> out(pids.size());
  const auto start = std::chrono::steady_clock::now();
  std::atomic<std::size_t> next{0};
  // Each worker takes the next process in order; the threads are the bound.
  auto work = [&] {
    for (std::size_t i = next++; i < pids.size(); i = next++) {
      if (i >= parallel && std::chrono::steady_clock::now() - start > deadline) {
        out[i].pid = pids[i];
        out[i].text = "not dumped: its turn came after this node's " +
                      std::to_string(deadline.count()) + " s (" + std::to_string(pids.size()) +
                      " processes, at most " + std::to_string(parallel) +
                      " dumped at once, the ranks first)\n";
        continue;
      }
      try {
        out[i] = dump(pids[i]);
      } catch (const std::exception& e) {  // one process's failure is its block's, not the node's
        out[i].pid = pids[i];
        out[i].text = std::string("not dumped: ") + e.what() + "\n";
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < std::min(std::max<std::size_t>(parallel, 1), pids.size()); ++t)
    threads.emplace_back(work);
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace llmwatch
