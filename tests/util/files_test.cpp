// The forensics llmwatch keeps (stacks, requeued runs' logs) are bounded by count: the newest
// are kept, the rest removed, and nothing but regular files is touched.
#include "util/files.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace llmwatch {
namespace {

using testing::TempDir;
using testing::write_file;

TEST(KeepNewestFiles, TheNewestAreKeptAndTheRestRemoved) {
  TempDir dir;
  for (int i = 0; i < 5; ++i) {
    std::string path = dir / ("f" + std::to_string(i));
    write_file(path, "x");
    std::filesystem::last_write_time(
        path, std::filesystem::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  std::filesystem::create_directory(dir / "sub");
  keep_newest_files(dir.path, 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "f0"));
  EXPECT_FALSE(std::filesystem::exists(dir / "f2"));
  EXPECT_TRUE(std::filesystem::exists(dir / "f3"));
  EXPECT_TRUE(std::filesystem::exists(dir / "f4"));
  EXPECT_TRUE(std::filesystem::exists(dir / "sub")) << "a directory is not a kept file";
  keep_newest_files(dir / "missing", 2);  // nothing there: nothing happens
}

}  // namespace
}  // namespace llmwatch
