#include "slurm/hostlist_cache.h"

#include <gtest/gtest.h>

#include "slurm/hostlist.h"

namespace llmwatch {
namespace {

TEST(HostlistCache, GivesWhatAnExpansionGives) {
  HostlistCache cache;
  for (const std::string list : {"gpu[001-004]", "rack[1-2]-n[01-02]", "a,b", "", "node[3-1]"})
    EXPECT_EQ(cache.hosts(list), hosts_in(list)) << list;
  // Asked again: the same answer (from memory now).
  EXPECT_EQ(cache.hosts("gpu[001-004]"),
            (std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu004"}));
}

// Bounded: past its size it starts over, and what it gives is still each list's own hosts.
TEST(HostlistCache, ForgetsPastItsSizeAndStaysRight) {
  HostlistCache cache(3);
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 10; ++i) {
      const std::string list = "n[" + std::to_string(i) + "-" + std::to_string(i + 1) + "]";
      EXPECT_EQ(cache.hosts(list), hosts_in(list));
      EXPECT_LE(cache.size(), 3u);
    }
}

}  // namespace
}  // namespace llmwatch
