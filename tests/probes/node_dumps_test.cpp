// How one node's processes are dumped: the ranks first, at most `parallel` at once, none
// started past the node's deadline. Before, every Python process of the job on the node was
// dumped at once (one gdb each: 72 for 8 ranks with 8 DataLoader workers each).
#include "probes/node_dumps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

namespace llmwatch {
namespace {

TEST(NodeDumps, TheRanksOwnProcessesComeFirstThenTheirWorkers) {
  // torchrun: its agent (SLURM_PROCID), two ranks, each rank's DataLoader worker.
  std::vector<RankProcess> node = {{200, 1, 1, 2, "SLURM_PROCID"}, {201, 200, 4, 8, "RANK"},
                                   {202, 201, 4, 8, "RANK"},       {203, 200, 5, 8, "RANK"},
                                   {204, 203, 5, 8, "RANK"},       {205, 1, -1, -1, ""}};
  EXPECT_EQ(ranks_first(node), (std::vector<int>{201, 203, 200, 202, 204, 205}));
  EXPECT_TRUE(ranks_first({}).empty());
}

// Each dump waits until as many as may run at once have started (or 10 s): the most seen at
// once is then the bound, never more, and the first to start are the first in order.
TEST(NodeDumps, AtMostTheBoundRunAtOnceInOrder) {
  std::vector<int> pids;
  for (int p = 1; p <= 40; ++p) pids.push_back(p);
  for (std::size_t parallel : {1u, 4u, 16u}) {
    std::mutex m;
    std::condition_variable cv;
    int running = 0, most = 0;
    std::size_t started = 0;
    std::vector<int> order;
    auto stacks = dump_bounded(pids, parallel, Seconds(600), [&](int pid) {
      std::unique_lock lock(m);
      order.push_back(pid);
      most = std::max(most, ++running);
      ++started;
      // This dump's wave ends where `parallel` more have started (or the processes run out).
      const std::size_t wave_end =
          std::min(pids.size(), parallel * ((started + parallel - 1) / parallel));
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return started >= wave_end; });
      --running;
      return ProcessStack{"", pid, "python3", "Traceback (most recent call first):\n", ""};
    });
    EXPECT_EQ(most, static_cast<int>(parallel));
    ASSERT_EQ(stacks.size(), pids.size());
    for (std::size_t i = 0; i < pids.size(); ++i) EXPECT_EQ(stacks[i].pid, pids[i]);
    // The first wave is the first in order.
    std::vector<int> first(order.begin(), order.begin() + static_cast<long>(parallel));
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, std::vector<int>(pids.begin(), pids.begin() + static_cast<long>(parallel)));
  }
}

// Past the node's deadline (0 s here) only the first wave is dumped; the rest say why, in
// their own blocks; a dump that throws is its own block's failure.
TEST(NodeDumps, NoneStartsPastTheDeadlineAndAFailureIsItsOwnBlock) {
  std::atomic<int> dumped{0};
  auto stacks = dump_bounded({11, 12, 13, 14, 15}, 2, Seconds(0), [&](int pid) {
    ++dumped;
    if (pid == 12) throw std::runtime_error("gdb could not start");
    return ProcessStack{"", pid, "python3", "ok\n", ""};
  });
  ASSERT_EQ(stacks.size(), 5u);
  EXPECT_EQ(dumped.load(), 2);
  EXPECT_EQ(stacks[0].text, "ok\n");
  EXPECT_EQ(stacks[1].text, "not dumped: gdb could not start\n");
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(stacks[i].pid, 13 + i - 2);
    EXPECT_EQ(stacks[i].text,
              "not dumped: its turn came after this node's 0 s (5 processes, at most 2 dumped "
              "at once, the ranks first)\n");
  }
  EXPECT_TRUE(dump_bounded({}, 16, Seconds(20), [](int) { return ProcessStack{}; }).empty());
}

}  // namespace
}  // namespace llmwatch
