#include "store/lease.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

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
  // Finds the dead racer's lock, removes it and takes over in the same call.
  EXPECT_TRUE(c.acquire(now + 2, 60));
}

pid_t dead_pid() {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  return gone;
}

// The defect: a holder SIGKILLed on this host locked every successor out for its whole TTL
// (15 minutes by default), leaving the runs unwatched.
TEST(Lease, ADeadHolderOnThisHostHoldsNothing) {
  testing::TempDir dir;
  double now = static_cast<double>(std::time(nullptr));
  testing::write_file(dir / "lease", "host-a " + std::to_string(dead_pid()) + " " +
                                         std::to_string(now + 600) + " 7\n");
  testing::write_file(dir / "lease.generation", "7\n");
  Lease other_host(dir.path, "host-b", getpid());
  EXPECT_FALSE(other_host.acquire(now, 60));  // cannot see processes on host-a
  Lease a(dir.path, "host-a", getpid());
  EXPECT_TRUE(a.acquire(now, 60));
  EXPECT_EQ(a.generation(), 8);
  EXPECT_EQ(Lease::read(dir.path)->generation, 8);
}

// Fencing: every acquisition gets a new generation, and a deposed holder learns it before
// acting (check), even though its own idea of the lease is unchanged.
TEST(Lease, CheckFencesADeposedHolder) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  ASSERT_TRUE(a.acquire(1000, 60));
  EXPECT_EQ(a.check(1030), "");
  EXPECT_NE(a.check(1061).find("expired"), std::string::npos);
  ASSERT_TRUE(b.acquire(1061, 60));
  EXPECT_EQ(b.generation(), a.generation() + 1);
  EXPECT_NE(a.check(1062).find("taken over by host-b:2"), std::string::npos) << a.check(1062);
  EXPECT_TRUE(a.held());  // a has not renewed yet: only check() can tell it
  b.release();
  // Released and taken again by the same process: still a new generation.
  ASSERT_TRUE(b.acquire(1070, 60));
  EXPECT_EQ(b.generation(), a.generation() + 2);
}

// Another host's live takeover lock on shared storage whose clock is an hour behind this
// one's: its mtime looks an hour old, yet it is live. Staleness is judged by this host's own
// clock only, from when it first saw the lock unchanged (#26 B: the lock was deleted at once).
TEST(Lease, AnotherHostsLockIsStaleOnlyOnceSeenUnchangedForAWhile) {
  testing::TempDir dir;
  double now = static_cast<double>(std::time(nullptr));
  Lease b(dir.path, "host-b", 2);
  ASSERT_TRUE(b.acquire(now, 1));
  std::string lock = dir / "lease.takeover";
  testing::write_file(lock, "host-c 4242 " + std::to_string(now - 3600) + "\n");
  struct timespec old[2] = {{static_cast<time_t>(now - 3600), 0},
                            {static_cast<time_t>(now - 3600), 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, lock.c_str(), old, 0), 0);
  Lease a(dir.path, "host-a", 1);
  EXPECT_FALSE(a.acquire(now + 2, 60));  // the lease expired, but host-c is taking it over
  EXPECT_TRUE(std::filesystem::exists(lock)) << "a live lock of another host was deleted";
  EXPECT_FALSE(a.acquire(now + 4, 60));
  EXPECT_TRUE(std::filesystem::exists(lock));
  // The same lock, still there 5 s later by this host's clock: its writer is gone, and the
  // expired lease is taken over.
  EXPECT_TRUE(a.acquire(now + 8, 60));
  EXPECT_EQ(Lease::read(dir.path)->host, "host-a");
}

// Renewal compares and writes under the takeover lock: while a racer holds it (taking the
// lease over), a renewal must not write.
TEST(Lease, RenewWaitsForNoTakeoverInProgress) {
  testing::TempDir dir;
  double now = static_cast<double>(std::time(nullptr));
  Lease a(dir.path, "host-a", 1);
  ASSERT_TRUE(a.acquire(now, 60));
  testing::write_file(dir / "lease.takeover", "host-b 2 " + std::to_string(now) + "\n");
  EXPECT_FALSE(a.renew(now + 1, 60));
  EXPECT_DOUBLE_EQ(Lease::read(dir.path)->expires, now + 60);  // untouched
}

// A holder whose renewal could not be written (a full or read-only state disk) still holds
// its unexpired lease: once it can write again it renews it at once. It used to forget it
// held it, find the lease naming itself "held by another", and wait out its own TTL (3 min at
// the defaults) supervising nothing (bench/chaos_soak.py --seed 47, a read-only disk).
TEST(Lease, AHolderThatCouldNotWriteItsRenewalRenewsOnceItCan) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  ASSERT_TRUE(a.acquire(1000, 60));
  std::filesystem::create_directory(dir / "lease.renew.1");  // the renewal cannot be written
  EXPECT_FALSE(a.acquire(1030, 60));
  EXPECT_NE(a.last_error().find("lease.renew.1"), std::string::npos) << a.last_error();
  EXPECT_DOUBLE_EQ(Lease::read(dir.path)->expires, 1060);  // untouched
  std::filesystem::remove(dir / "lease.renew.1");
  EXPECT_TRUE(a.acquire(1040, 60));
  EXPECT_EQ(a.last_error(), "");
  EXPECT_DOUBLE_EQ(Lease::read(dir.path)->expires, 1100);
  EXPECT_FALSE(b.acquire(1070, 60));
  EXPECT_EQ(a.check(1070), "");
}

// The same where the takeover lock could not be taken (a read-only disk fails its creation;
// here another host's lock is in the way): the holder gets its lease back as soon as the lock
// can be taken, not at its expiry.
TEST(Lease, AHolderThatCouldNotTakeTheLockRenewsOnceItCan) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1);
  ASSERT_TRUE(a.acquire(1000, 60));
  testing::write_file(dir / "lease.takeover", "host-b 2 1029\n");
  EXPECT_FALSE(a.acquire(1030, 60));
  std::filesystem::remove(dir / "lease.takeover");
  EXPECT_TRUE(a.acquire(1031, 60));
  EXPECT_DOUBLE_EQ(Lease::read(dir.path)->expires, 1091);
}

// Something that is not a file where the lock or the lease goes is not read as one: it used to
// throw out of acquire ("basic_filebuf::underflow error reading the file: Is a directory").
TEST(Lease, ADirectoryInTheWayIsNoLeaseAndThrowsNothing) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  ASSERT_TRUE(a.acquire(1000, 60));
  std::filesystem::create_directories(dir / "lease.takeover/in-the-way");
  EXPECT_NO_THROW(EXPECT_FALSE(a.acquire(1030, 60)));
  EXPECT_NO_THROW(EXPECT_FALSE(b.acquire(1070, 60)));
  std::filesystem::remove_all(dir / "lease.takeover");
  std::filesystem::create_directories(dir / "fresh/lease/in-the-way");
  Lease c(dir / "fresh", "host-c", 3);
  EXPECT_NO_THROW(EXPECT_FALSE(c.acquire(1000, 60)));
  EXPECT_NO_THROW(EXPECT_FALSE(c.acquire(1010, 60)));
}

// Past its expiry a holder that could not write has nothing to keep: it competes like anyone,
// and another instance may have taken the lease meanwhile.
TEST(Lease, AHolderThatCouldNotWriteUntilItsLeaseExpiredCompetes) {
  testing::TempDir dir;
  Lease a(dir.path, "host-a", 1), b(dir.path, "host-b", 2);
  ASSERT_TRUE(a.acquire(1000, 60));
  std::filesystem::create_directory(dir / "lease.renew.1");
  EXPECT_FALSE(a.acquire(1030, 60));
  EXPECT_TRUE(b.acquire(1061, 60));
  std::filesystem::remove(dir / "lease.renew.1");
  EXPECT_FALSE(a.acquire(1062, 60));
  EXPECT_FALSE(a.held());
  EXPECT_EQ(Lease::read(dir.path)->host, "host-b");
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
