// Whole cycles from random bytes (the seeded twin of the fuzz_cycle libFuzzer target): the
// properties in cycle_driver.h hold for every input, not only for the cases we thought of.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "cycle_driver.h"

namespace llmwatch {
namespace {

TEST(CycleProperties, RandomQueuesLogsAndClocksNeverThrowOrActOnAnUnknown) {
  std::mt19937 rng(20261122);
  const int kInputs = 60;
  std::map<std::string, int> acted;  // the properties are not vacuous: things did happen
  for (int i = 0; i < kInputs; ++i) {
    std::vector<std::uint8_t> bytes(64 + rng() % 512);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    testing::TempDir dir;
    std::string violation = testing::drive_cycles(bytes.data(), bytes.size(), dir.path);
    ASSERT_EQ(violation, "") << "input " << i;
    Store store(dir / "state");
    for (const auto& a : store.recent_actions(500)) ++acted[a.kind + " " + a.state];
  }
  std::string seen;
  for (const auto& [what, n] : acted) seen += what + "=" + std::to_string(n) + " ";
  EXPECT_GT(acted["alert done"], 0) << seen;
  EXPECT_GT(acted["restart done"] + acted["restart failed"] + acted["restart skipped"], 0) << seen;
  RecordProperty("actions", seen);
}

}  // namespace
}  // namespace llmwatch
