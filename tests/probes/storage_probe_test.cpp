#include "probes/storage_probe.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace llmwatch {
namespace {

// A storage path that is a symlink loop: an error naming the path (unknown), never "full".
TEST(StorageProbe, SymlinkLoopIsAClearErrorWithinTheDeadline) {
  testing::TempDir dir;
  std::filesystem::create_symlink(dir / "b", dir / "a");
  std::filesystem::create_symlink(dir / "a", dir / "b");
  StorageSettings s;
  s.path = dir / "a";
  auto o = probe_storage(s, std::chrono::milliseconds(5000));
  EXPECT_FALSE(o.ok());
  EXPECT_NE(o.error.find(dir / "a"), std::string::npos) << o.error;
  EXPECT_EQ(o.total_bytes, 0u);
}

}  // namespace
}  // namespace llmwatch
