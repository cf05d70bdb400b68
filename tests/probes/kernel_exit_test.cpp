// Whether a process's exit is under way in the kernel, from /proc alone (#30): a zombie, every
// thread past do_exit's start or with a SIGKILL pending, or its memory being dumped. One thread
// ending (a main thread that called pthread_exit while others run) is not the process's end.
#include "probes/kernel_exit.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "live_python.h"
#include "test_util.h"

namespace llmwatch {
namespace {

std::string proc_capture(const std::string& name) {
  return testing::read_file(testing::fixture("proc-exit/" + name + ".txt"));
}

ThreadExitState captured(const std::string& name) {
  return parse_thread_exit_state(proc_capture(name + "-stat"), proc_capture(name + "-status"));
}

// A thread's stat and status as the kernel prints them, with the fields this reads set.
ThreadExitState a_thread(char state, unsigned long flags, const std::string& pending = "0",
                         const std::string& shared = "0", const std::string& dumping = "0") {
  const std::string stat = "77 (pt_main (x) S 1) " + std::string(1, state) + " 1 77 77 0 -1 " +
                           std::to_string(flags) + " 0 0 0 0 0\n";
  const std::string status = "Name:\tpt_main\nState:\t" + std::string(1, state) +
                             "\nCoreDumping:\t" + dumping + "\nSigPnd:\t" + pending +
                             "\nShdPnd:\t" + shared + "\nSigBlk:\t0000000000000000\n";
  return parse_thread_exit_state(stat, status);
}

// Whether the main thread of `pid` becomes a zombie ('Z' in its stat) within 20 s.
bool becomes_zombie(pid_t pid) {
  return testing::eventually(
      [&] {
        return parse_thread_exit_state(testing::read_file("/proc/" + std::to_string(pid) + "/stat"),
                                       "")
                   .state == 'Z';
      },
      20);
}

// Captured from live processes on this project's Debian 12 machine (tests/fixtures/NOTICE.md):
// python3 sleeping, and the same killed and not yet reaped.
TEST(KernelExit, AZombieIsExitingAndARunningProcessIsNot) {
  const ThreadExitState running = captured("python3-running");
  EXPECT_EQ(running.state, 'S');
  EXPECT_FALSE(running.doomed());
  EXPECT_EQ(kernel_exit({running}), "");
  const ThreadExitState zombie = captured("python3-killed-zombie");
  EXPECT_EQ(zombie.state, 'Z');
  EXPECT_TRUE(zombie.kill_pending);  // SIGKILL in ShdPnd: sent to the process
  EXPECT_TRUE(zombie.doomed());
  EXPECT_EQ(kernel_exit({zombie}), "do_exit");
}

// Captured while a python3 that had touched 6 GiB called os.abort() with core dumps on: its main
// thread writing the core (PF_DUMPCORE, running), its other thread waiting in do_exit (PF_EXITING,
// idle). Neither has a signal pending; CoreDumping says it, for every thread.
TEST(KernelExit, ACoreBeingWrittenIsSeenInEveryThread) {
  const ThreadExitState main = captured("python3-dumping-core-main");
  const ThreadExitState other = captured("python3-dumping-core-thread");
  EXPECT_EQ(main.state, 'R');
  EXPECT_EQ(main.flags & 0x200, 0x200u);  // PF_DUMPCORE
  EXPECT_EQ(other.state, 'I');
  EXPECT_TRUE(other.doomed());
  EXPECT_FALSE(main.kill_pending || other.kill_pending);
  EXPECT_TRUE(main.core_dumping && other.core_dumping);
  EXPECT_EQ(kernel_exit({main, other}), "do_coredump");
  EXPECT_EQ(kernel_exit({main}), "do_coredump");
}

TEST(KernelExit, EveryThreadMustBeDoomedUnlessItsMemoryIsBeingDumped) {
  const auto running = a_thread('S', 0x400040), in_driver = a_thread('D', 0x400040);
  const auto exiting = a_thread('D', 0x400044), zombie = a_thread('Z', 0x40800c);
  const auto killed = a_thread('D', 0x400040, "0000000000000100");
  const auto killed_shared = a_thread('S', 0x400040, "0", "0000000000004100");
  ASSERT_EQ(exiting.state, 'D');  // the command name's ") S 1" is not read as the state
  // exit_group: the caller in do_exit, the others killed, one still in the driver.
  EXPECT_EQ(kernel_exit({exiting, zombie, killed}), "do_exit");
  EXPECT_EQ(kernel_exit({killed_shared, killed_shared}), "do_exit");
  // A main thread gone by pthread_exit (a zombie) while another thread runs; a thread in the
  // driver with no signal pending: nothing says the process ends.
  EXPECT_EQ(kernel_exit({zombie, running}), "");
  EXPECT_EQ(kernel_exit({in_driver, exiting}), "");
  // PyTorch's watchdog aborts from its own thread: that thread dumps, the others wait.
  const auto dumping = a_thread('D', 0x400240, "0", "0", "1");
  EXPECT_EQ(kernel_exit({exiting, dumping, running}), "do_coredump");
  // A SIGTERM (15) pending is not SIGKILL; a thread that could not be read is not counted.
  EXPECT_EQ(kernel_exit({a_thread('S', 0x400040, "0000000000004000")}), "");
  EXPECT_EQ(kernel_exit({zombie, parse_thread_exit_state("", "")}), "do_exit");
  EXPECT_EQ(kernel_exit({}), "");
}

TEST(KernelExit, WhatIsNotStatReadsAsUnread) {
  for (const char* bad :
       {"", "77 python3 S 1 77 77 0 -1 4", "77 (x) S 1 77", "77 (x) SS 1 2 3 4 5 6",
        "77 (x) S 1 77 77 0 -1 -4 0", "77 (x) S 1 77 77 0 -1 4x 0"}) {
    const auto t = parse_thread_exit_state(bad, "SigPnd:\t0000000000000100\n");
    EXPECT_EQ(t.state, '?') << bad;
    EXPECT_EQ(kernel_exit({t}), "") << bad;
  }
  // A status value that is not a hex mask says nothing.
  EXPECT_FALSE(a_thread('S', 0, "01zz").kill_pending);
  EXPECT_FALSE(a_thread('S', 0, "").kill_pending);
}

TEST(KernelExit, RealProcessesAsProcShowsThem) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  testing::LivePython sleeping("import time\ntime.sleep(600)\n");
  EXPECT_EQ(process_kernel_exit(sleeping.pid), "");
  // Ended and not reaped (LivePython reaps it at the end only).
  testing::LivePython ended("pass\n");
  ASSERT_TRUE(becomes_zombie(ended.pid));
  EXPECT_EQ(process_kernel_exit(ended.pid), "do_exit");
  // Its main thread gone by pthread_exit, another thread still sleeping: the process runs.
  testing::LivePython main_gone(
      "import ctypes, threading, time\n"
      "threading.Thread(target=time.sleep, args=(600,)).start()\n"
      "ctypes.CDLL(None).pthread_exit(None)\n");
  ASSERT_TRUE(becomes_zombie(main_gone.pid));
  EXPECT_EQ(process_kernel_exit(main_gone.pid), "");
  EXPECT_EQ(process_kernel_exit(1 << 30), "");  // no such process
}

}  // namespace
}  // namespace llmwatch
