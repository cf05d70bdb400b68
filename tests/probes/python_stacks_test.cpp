#include "probes/python_stacks.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

// As gdb with CPython's py-bt helper prints it (captured from a live python3.11 on Debian 12).
const char* kPyBt =
    "Traceback (most recent call first):\n"
    "  <built-in method sleep of module object at remote 0x7f5e4d1c7330>\n"
    "  File \"/work/train.py\", line 4, in allreduce_wait\n"
    "    time.sleep(0.5)\n"
    "  File \"/work/train.py\", line 6, in train_step\n"
    "    allreduce_wait()\n";

// As `py-spy dump` prints it.
const char* kPySpy =
    "Process 4242: python3 train.py\n"
    "Python v3.11.2 (/usr/bin/python3.11)\n\n"
    "Thread 4242 (idle): \"MainThread\"\n"
    "    __next__ (torch/utils/data/dataloader.py:631)\n"
    "    train_step (train.py:6)\n";

TEST(PythonStacks, TheInnermostFrameOfEitherTool) {
  EXPECT_EQ(innermost_frame(kPyBt), "allreduce_wait (train.py:4)");
  EXPECT_EQ(innermost_frame(kPySpy), "__next__ (dataloader.py:631)");
  EXPECT_EQ(innermost_frame("gdb: ptrace: Operation not permitted.\n"), "");
}

// The ranks grouped by where they wait, largest group first; the odd one out says where it is.
TEST(PythonStacks, TheOddOneOutStandsOut) {
  std::vector<ProcessStack> stacks;
  for (int i = 0; i < 3; ++i) stacks.push_back({"node-1", 100 + i, "python3", kPyBt, ""});
  stacks.push_back({"node-2", 77, "python3", kPySpy, ""});
  auto parsed = parse_stacks(format_stacks(stacks));
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed[3].node, "node-2");
  EXPECT_EQ(parsed[3].pid, 77);
  EXPECT_EQ(summarize_stacks(parsed),
            "4 processes: 3 in allreduce_wait (train.py:4); 1 in __next__ (dataloader.py:631) "
            "[node-2 pid 77]");
  EXPECT_EQ(summarize_stacks({}), "no Python process found");
}

// Confirmation: ranks stuck in a collective show the same frames twice; a moving run does not.
TEST(PythonStacks, StacksThatMoveDisproveAHang) {
  std::vector<ProcessStack> hung = {{"node-1", 100, "python3", kPyBt, ""},
                                    {"node-2", 77, "python3", kPySpy, ""}};
  EXPECT_EQ(python_frames(kPyBt),
            (std::vector<std::string>{"allreduce_wait (train.py:4)", "train_step (train.py:6)"}));
  EXPECT_FALSE(stacks_moved(hung, hung));
  auto later = hung;
  later[1].text = "Thread 4242 (idle): \"MainThread\"\n    train_step (train.py:7)\n";
  EXPECT_TRUE(stacks_moved(hung, later));  // other frames
  auto fewer = hung;
  fewer.pop_back();
  EXPECT_FALSE(stacks_moved(hung, fewer));  // a rank gone proves nothing
  auto more = hung;
  more.push_back({"node-2", 78, "python3", kPySpy, ""});
  EXPECT_TRUE(stacks_moved(hung, more));  // a new process of the job
  auto unreadable = hung;
  unreadable[0].text = "gdb: ptrace: Operation not permitted.\n";
  EXPECT_FALSE(stacks_moved(hung, unreadable));  // no frames is no evidence either way
}

// `scontrol listpids 2 node-1` as Slurm 22.05 prints it (captured on the local cluster): the
// batch step's processes, children included, and an srun step's.
TEST(PythonStacks, SlurmdListsTheJobsProcesses) {
  auto pids = parse_listpids(
      "PID      JOBID    STEPID   LOCALID GLOBALID\n"
      "2032     2        0        0       0       \n"
      "1974     2        batch    0       0       \n"
      "2016     2        batch    -       -       \n");
  ASSERT_TRUE(pids.has_value());
  EXPECT_EQ(*pids, (std::vector<int>{2032, 1974, 2016}));
  EXPECT_EQ(parse_listpids("PID      JOBID    STEPID   LOCALID GLOBALID\n"), std::vector<int>{});
  // Anything else is not a list to trust: the caller falls back to the environment.
  EXPECT_FALSE(parse_listpids("slurm_load_jobs error: Invalid job id specified\n"));
  EXPECT_FALSE(parse_listpids("PID JOBID\nx12 2\n"));
  EXPECT_FALSE(parse_listpids(""));
}

}  // namespace
}  // namespace llmwatch
