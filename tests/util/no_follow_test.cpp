#include "util/no_follow.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "test_util.h"

namespace llmwatch {
namespace {

namespace fs = std::filesystem;

// A switch path whose parent directory the job's user replaced by a symlink: root follows
// neither it nor a link at the name, and creates nothing anywhere (#26 B).
TEST(NoFollow, NoSymlinkIsFollowedAtAnyComponent) {
  testing::TempDir dir;
  fs::create_directories(dir / "elsewhere");
  fs::create_directories(dir / "work");
  fs::create_directory_symlink(dir / "elsewhere", dir / "work/ckpt");
  auto through_parent = create_no_follow(dir / "work/ckpt/kill", 0644);
  EXPECT_LT(through_parent.fd, 0);
  EXPECT_NE(through_parent.error.find("'ckpt' is a symlink"), std::string::npos)
      << through_parent.error;
  EXPECT_FALSE(fs::exists(dir / "elsewhere/kill"));

  fs::create_symlink(dir / "victim", dir / "work/kill");
  auto at_name = create_no_follow(dir / "work/kill", 0644);
  EXPECT_LT(at_name.fd, 0);
  EXPECT_FALSE(at_name.existed);
  EXPECT_FALSE(fs::exists(dir / "victim"));

  auto made = create_no_follow(dir / "work/save", 0644);
  ASSERT_GE(made.fd, 0) << made.error;
  ::close(made.fd);
  EXPECT_TRUE(fs::is_regular_file(dir / "work/save"));
  auto again = create_no_follow(dir / "work/save", 0644);
  EXPECT_TRUE(again.existed);
  EXPECT_LT(again.fd, 0);
  EXPECT_LT(create_no_follow(dir / "missing/kill", 0644).fd, 0);
}

}  // namespace
}  // namespace llmwatch
