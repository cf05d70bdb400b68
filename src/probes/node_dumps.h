#pragma once
// How one node's processes are dumped (`llmwatch stacks`): each dump is a gdb (or py-spy)
// attached to one process, reading the symbols of every library it maps; a PyTorch rank maps
// hundreds of MiB of them, and the step runs inside the job's cgroup. A node of 8 ranks with 8
// DataLoader workers each holds 72 Python processes: all at once, 72 gdbs would load the node
// and the job's memory limit. So at most kParallelDumps run at once, the ranks' own processes
// first (their stacks are what confirms a hang; a worker's is what explains one), and none
// starts past the node's deadline, so that the node answers within two dumps' time.
#include <cstddef>
#include <functional>
#include <vector>

#include "config/config.h"
#include "probes/python_stacks.h"
#include "probes/rank_processes.h"

namespace llmwatch {

// A GPU node's ranks (8, at most 16) in one wave, as before this bound.
inline constexpr std::size_t kParallelDumps = 16;

// The ranks' own processes first (rank_processes.h: not their workers), then every other, each
// part in the order given.
std::vector<int> ranks_first(const std::vector<RankProcess>& processes);

// Each of `pids` dumped by `dump`, at most `parallel` at once, in that order; the first
// `parallel` always start, a later one only within `deadline` of the start, else its block says
// it was not dumped. The stacks come back in `pids`' order.
std::vector<ProcessStack> dump_bounded(const std::vector<int>& pids, std::size_t parallel,
                                       Seconds deadline,
                                       const std::function<ProcessStack(int)>& dump);

}  // namespace llmwatch
