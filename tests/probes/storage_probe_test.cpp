#include "probes/storage_probe.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>

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

// A statvfs that hangs like one on a dead NFS mount, until the test lets it go.
std::mutex gate_mutex;
std::condition_variable gate_cv;
bool gate_open = false;
std::atomic<int> hanging_calls{0};
int hanging_statvfs(const char* path, struct statvfs* st) {
  ++hanging_calls;
  std::unique_lock lock(gate_mutex);
  gate_cv.wait(lock, [] { return gate_open; });
  return ::statvfs(path, st);
}

// The defect: every cycle started one more thread on a hung mount, each stuck in the kernel
// for good. Now one call per path is outstanding; later cycles are "unknown" at once.
TEST(StorageProbe, OneHungStatvfsPerPathAtMost) {
  testing::TempDir dir;
  StorageSettings s;
  s.path = dir.path;
  auto first = probe_storage(s, std::chrono::milliseconds(50), hanging_statvfs);
  EXPECT_NE(first.error.find("no answer within"), std::string::npos) << first.error;
  auto second = probe_storage(s, std::chrono::milliseconds(50), hanging_statvfs);
  EXPECT_NE(second.error.find("an earlier call has not answered"), std::string::npos)
      << second.error;
  EXPECT_EQ(hanging_calls.load(), 1);
  {
    std::lock_guard lock(gate_mutex);
    gate_open = true;
  }
  gate_cv.notify_all();
  // Once the hung call returns, the path is probed again (poll with a deadline).
  StorageObservation again;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    again = probe_storage(s, std::chrono::milliseconds(2000), hanging_statvfs);
  } while (!again.ok() && std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(again.ok()) << again.error;
  EXPECT_GT(again.total_bytes, 0u);
}

}  // namespace
}  // namespace llmwatch
