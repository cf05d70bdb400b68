// Whether a process is on its way out though still there (#30): its main thread in CPython's
// Py_FinalizeEx or libc's exit(), as gdb's backtrace shows it. Only a frame seen counts: a running
// rank, or a backtrace the unwinder could not finish, is never read as exiting.
#include "probes/process_exit.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "live_python.h"
#include "test_util.h"

namespace llmwatch {
namespace {

std::string backtrace(const std::string& name) {
  return testing::read_file(testing::fixture("gdb-backtrace/" + name + ".txt"));
}

// Captured from live processes (tests/fixtures/NOTICE.md): Debian's python3.11 with and without
// debug symbols (libpython's and libc's exported names are enough), and a pyenv 3.11.7 whose
// Py_FinalizeEx gdb shows twice (an inlined frame).
TEST(ProcessExit, AProcessExitingIsSeenInItsMainThreadsBacktrace) {
  for (const char* exiting :
       {"debian-3.11-thread-join-at-exit", "debian-3.11-thread-join-at-exit-no-symbols",
        "debian-3.11-atexit-handler", "debian-3.11-del-in-finalize",
        "pyenv-3.11.7-thread-join-at-exit"})
    EXPECT_EQ(exiting_frame(backtrace(exiting)), "Py_FinalizeEx") << exiting;
  // Past the interpreter: a C exit handler (a library's static destructor) that hangs.
  EXPECT_EQ(exiting_frame(backtrace("debian-3.11-c-exit-handler")), "__run_exit_handlers");
  EXPECT_EQ(exiting_frame(backtrace("debian-3.11-c-exit-handler-no-symbols")), "exit");
  for (const char* running :
       {"debian-3.11-running-lock-wait", "debian-3.11-running-lock-wait-no-symbols",
        "debian-3.11-running-c-call", "pyenv-3.11.7-running-lock-wait"})
    EXPECT_EQ(exiting_frame(backtrace(running)), "") << running;
}

TEST(ProcessExit, OnlyAFrameOfThatNameSaysIt) {
  // Without debug symbols (libpython's exported names), and the names of 3.13 and Py_Exit.
  EXPECT_EQ(exiting_frame("#7  0x00007f1 in Py_FinalizeEx () from /usr/lib/libpython3.10.so\n"),
            "Py_FinalizeEx");
  EXPECT_EQ(exiting_frame("#7  0x00007f1 in _Py_Finalize (runtime=...) at Python/x.c:2\n"),
            "_Py_Finalize");
  EXPECT_EQ(exiting_frame("#3 Py_Exit (sts=1) at Python/pylifecycle.c:3003\n"), "Py_Exit");
  EXPECT_EQ(exiting_frame("#2  0x00007f1 in __GI_exit (status=1) at ./stdlib/exit.c:146\n"),
            "__GI_exit");
  // The name elsewhere on a line, a longer name, a line that is not a frame, a cut frame.
  for (const char* not_a_frame :
       {"#4  0x00007f1 in call (name=\"Py_FinalizeEx\") at x.c:1\n",
        "#4  0x00007f1 in Py_FinalizeExtra () at x.c:1\n", "Py_FinalizeEx () at x.c:1\n",
        "#4  0x00007f1 in _exit () from /lib/x86_64-linux-gnu/libc.so.6\n",
        "#4  0x00007f1 in on_exit () from /lib/x86_64-linux-gnu/libc.so.6\n",
        "#4  0x00007f1 in trainer::exit () at t.cpp:1\n", "warning: Py_FinalizeEx (not a frame)\n",
        "#4  0x00007f1 in Py_FinalizeEx\n", "#x  0x00007f1 in Py_FinalizeEx () at x.c:1\n",
        "#4 0x00007f1 Py_FinalizeEx () at x.c:1\n", "", "#\n", "#12"})
    EXPECT_EQ(exiting_frame(not_a_frame), "") << not_a_frame;
  // A backtrace the unwinder gave up on proves nothing either way.
  EXPECT_EQ(exiting_frame("#0  0x00007f1 in ?? ()\nBacktrace stopped: previous frame "
                          "identical to this frame (corrupt stack?)\n"),
            "");
}

// Real processes, as a rank's would be: one whose error was raised to the top and which
// lingers in its exit, joining a thread that never ends, is seen exiting; one blocked in
// its program is not, however long it is looked at.
TEST(ProcessExit, ALiveRankLingeringInItsExitIsSeenSoAndARunningOneNot) {
  if (auto why = testing::no_live_gdb(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  const std::string started = dir / "started";
  testing::LivePython running("import threading\nopen('" + started +
                              "', 'w').close()\nthreading.Event().wait()\n");
  testing::LivePython exiting(testing::kLingersInItsExit);
  std::string seen;
  ASSERT_TRUE(testing::eventually(
      [&] { return !(seen = main_thread_exiting(exiting.pid, Seconds(20))).empty(); }, 60))
      << "gdb could not attach, or never saw the exit";
  EXPECT_EQ(seen, "Py_FinalizeEx");
  ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(started); }, 30));
  for (int look = 0; look < 3; ++look) EXPECT_EQ(main_thread_exiting(running.pid, Seconds(20)), "");
  // A process that is not there, or not one gdb can read: nothing seen.
  EXPECT_EQ(main_thread_exiting(999999999, Seconds(5)), "");
}

}  // namespace
}  // namespace llmwatch
