// One gdb for a rank's exit and its Python stack (#30): the look after a fatal line takes the
// hang's first dump with the backtrace it reads for the exit.
#include "probes/rank_look.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "live_python.h"
#include "test_util.h"

namespace llmwatch {
namespace {

ProcessResult gdb_printed(const std::string& fixture) {
  ProcessResult r;
  r.started = true;
  r.exit_code = 0;
  r.out = testing::read_file(testing::fixture("gdb-backtrace/" + fixture + ".txt"));
  return r;
}

// Captured from live processes (tests/fixtures/NOTICE.md): `thread 1`, `bt` and `py-bt` in one
// gdb.
TEST(RankLook, OneGdbSaysTheExitAndGivesTheStack) {
  RankLook exiting =
      read_rank_look(42, gdb_printed("debian-3.11-thread-join-at-exit-with-py-bt"), true, true);
  EXPECT_EQ(exiting.exiting, "Py_FinalizeEx");
  ASSERT_TRUE(exiting.stack);
  EXPECT_EQ(exiting.stack->pid, 42);
  EXPECT_EQ(exiting.stack->innermost, "_shutdown (threading.py:1583)");
  // The stack is py-bt's alone, as a dump's: no native frame in it.
  EXPECT_EQ(exiting.stack->text.rfind(kPyBtStart, 0), 0u) << exiting.stack->text;
  EXPECT_EQ(exiting.stack->text.find("#20 "), std::string::npos);

  RankLook running =
      read_rank_look(43, gdb_printed("debian-3.11-running-event-wait-with-py-bt"), true, true);
  EXPECT_EQ(running.exiting, "");
  ASSERT_TRUE(running.stack);
  EXPECT_EQ(training_frames(running.stack->text).size(), 4u) << running.stack->text;
  EXPECT_EQ(running.stack->innermost, "wait (threading.py:320)");
}

TEST(RankLook, WhatWasNotAskedForOrNotSeenIsNotSaid) {
  auto out = gdb_printed("debian-3.11-thread-join-at-exit-with-py-bt");
  // A stack alone (a rank not looked into for its exit): no exit said from its backtrace.
  RankLook stack_only = read_rank_look(42, out, false, true);
  EXPECT_EQ(stack_only.exiting, "");
  EXPECT_TRUE(stack_only.stack);
  EXPECT_FALSE(read_rank_look(42, out, true, false).stack);
  // A gdb killed at its timeout proves nothing of the exit; the frames it printed are kept, as a
  // dump's are, and where it printed none its block says why.
  out.timed_out = true;
  out.error = "timed out after 8s";
  RankLook cut = read_rank_look(42, out, true, true);
  EXPECT_EQ(cut.exiting, "");
  ASSERT_TRUE(cut.stack);
  EXPECT_EQ(cut.stack->innermost, "_shutdown (threading.py:1583)");
  out.out = out.out.substr(0, out.out.find(kPyBtStart));
  RankLook silent = read_rank_look(42, out, true, true);
  EXPECT_EQ(silent.exiting, "");
  EXPECT_NE(silent.stack->text.find("timed out"), std::string::npos) << silent.stack->text;
  // A frame named "exit" in py-bt's part is a Python function's, not libc's exit().
  ProcessResult py_exit;
  py_exit.started = true;
  py_exit.exit_code = 0;
  py_exit.out = "#0  0x00007f1 in epoll_wait () from /lib/libc.so.6\n" + std::string(kPyBtStart) +
                "\n#3 0x00007f1 in exit () at x.c:1\n  File \"/w/t.py\", line 3, in exit\n";
  EXPECT_EQ(read_rank_look(42, py_exit, true, true).exiting, "");
}

// Real processes through the real gdb: a rank lingering in its exit is seen exiting and its
// stack is in `_shutdown`; one waiting in its program is not exiting, and its stack is there.
TEST(RankLook, ALiveRankLookedIntoOnceGivesItsExitAndItsStack) {
  if (auto why = testing::no_live_gdb(); !why.empty()) GTEST_SKIP() << why;
  if (dumps_with_py_spy()) GTEST_SKIP() << "py-spy on PATH: the stack is not gdb's";
  testing::TempDir dir;
  const std::string started = dir / "started";
  testing::LivePython running("import threading\ndef wait_in_allreduce():\n  open('" + started +
                              "', 'w').close()\n  threading.Event().wait()\nwait_in_allreduce()\n");
  testing::LivePython exiting(testing::kLingersInItsExit);
  RankLook seen;
  ASSERT_TRUE(testing::eventually(
      [&] {
        return !(seen = look_into_rank(exiting.pid, true, true, Seconds(20))).exiting.empty();
      },
      60))
      << "gdb could not attach, or never saw the exit";
  EXPECT_EQ(seen.exiting, "Py_FinalizeEx");
  ASSERT_TRUE(seen.stack);
  EXPECT_NE(seen.stack->innermost.find("_shutdown"), std::string::npos) << seen.stack->text;
  ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(started); }, 30));
  RankLook waiting;
  ASSERT_TRUE(testing::eventually(
      [&] {
        waiting = look_into_rank(running.pid, true, true, Seconds(20));
        return waiting.stack && !waiting.stack->innermost.empty();
      },
      30));
  EXPECT_EQ(waiting.exiting, "");
  EXPECT_NE(waiting.stack->text.find("wait_in_allreduce"), std::string::npos)
      << waiting.stack->text;
}

}  // namespace
}  // namespace llmwatch
