#include "store/lease.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>

#include "test_util.h"

namespace llmwatch {
namespace {

TEST(Lease, SecondHolderIsRefusedUntilRelease) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  EXPECT_TRUE(a.acquire(1000, 60));
  EXPECT_FALSE(b.acquire(1001, 60));
  auto info = Lease::read(dir.path);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->host, "host-a");
  EXPECT_EQ(info->pid, 1);
  a.release();
  EXPECT_TRUE(b.acquire(1002, 60));
}

TEST(Lease, ExpiredLeaseIsTakenOver) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  EXPECT_TRUE(a.acquire(1000, 60));
  EXPECT_FALSE(b.acquire(1059, 60));
  EXPECT_TRUE(b.acquire(1061, 60));
  EXPECT_EQ(Lease::read(dir.path)->host, "host-b");
  EXPECT_FALSE(a.renew(1062, 60));  // a lost it and knows
  EXPECT_FALSE(a.held());
  a.release();  // must not delete b's lease
  EXPECT_EQ(Lease::read(dir.path)->host, "host-b");
}

// Left by a process SIGKILLed while writing: an empty lease, or a takeover lock whose writer
// is gone. Neither may lock later instances out (a fault-injection test found the first).
TEST(Lease, HalfWrittenLeaseAndDeadTakeoverLockAreStale) {
  testing::TempDir dir;
  double now = static_cast<double>(std::time(nullptr));
  testing::write_file(dir / "lease", "");
  Lease a(dir.path, "host-a", 1);
  EXPECT_FALSE(a.acquire(now, 60));      // fresh: someone may be writing it right now
  EXPECT_TRUE(a.acquire(now + 10, 60));  // 10 s later it is a dead writer's
  a.release();

  Lease b(dir.path, "host-b", 2);
  EXPECT_TRUE(b.acquire(now, 1));
  // A takeover lock held by a pid that does not exist on this host.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  testing::write_file(dir / "lease.takeover", "host-c " + std::to_string(gone) + " 0\n");
  Lease c(dir.path, "host-c", 3);
  EXPECT_FALSE(c.acquire(now + 2, 60));  // finds the dead racer's lock and removes it
  EXPECT_TRUE(c.acquire(now + 2, 60));
}

TEST(Lease, RenewExtends) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  EXPECT_TRUE(a.acquire(1000, 60));
  EXPECT_TRUE(a.renew(1050, 60));
  EXPECT_FALSE(b.acquire(1080, 60));
}

// Many processes race for a fresh lease, and for an expired one: exactly one wins each time.
void race(const std::string& dir, bool stale_first) {
  if (stale_first) {
    Lease old(dir, "old-host", 99999);
    ASSERT_TRUE(old.acquire(0, 1));
    // Leave the expired lease behind, as a crashed holder would.
    std::string path = old.path();
    testing::write_file(path + ".keep", testing::read_file(path));
    old.release();
    std::rename((path + ".keep").c_str(), path.c_str());
  }
  const int kRacers = 12;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kRacers; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      char go;
      close(ready[1]);
      if (read(ready[0], &go, 1) < 0) _exit(3);
      Lease lease(dir, "racer", getpid());
      bool won = lease.acquire(1000, 600);
      if (won) {
        // Keep holding it: a real holder does not release instantly.
        usleep(200000);
      }
      _exit(won ? 0 : 1);
    }
    pids.push_back(pid);
  }
  close(ready[0]);
  close(ready[1]);  // EOF releases every racer at once
  int winners = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++winners;
  }
  EXPECT_EQ(winners, 1);
}

TEST(Lease, ProcessesRacingForAFreshLeaseOneWins) {
  for (int round = 0; round < 10; ++round) {
    testing::TempDir dir;
    race(dir.path, false);
  }
}

TEST(Lease, ProcessesRacingForAnExpiredLeaseOneWins) {
  for (int round = 0; round < 10; ++round) {
    testing::TempDir dir;
    race(dir.path, true);
  }
}

}  // namespace
}  // namespace llmwatch

namespace llmwatch {
namespace {

// A daemon whose interval is longer than the lease TTL must still get its lease back.
TEST(Lease, HolderWhoseLeaseExpiredReacquires) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1);
  EXPECT_TRUE(a.acquire(1000, 60));
  EXPECT_TRUE(a.acquire(2000, 60));
  EXPECT_TRUE(a.held());
  EXPECT_DOUBLE_EQ(Lease::read(dir.path)->expires, 2060);
}

}  // namespace
}  // namespace llmwatch
