// srun --label output put back together task by task: a multi-node step's lines arrive as its
// nodes print them, one node's block interleaved with another's.
#include "slurm/srun_label.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

TEST(SrunLabel, EachTasksLinesComeBackTogetherInTheirOrder) {
  // Task 1's lines between task 0's, padded labels (ten tasks or more), an empty line.
  const std::string out =
      " 0: === node-1 ===\n"
      "10: === node-11 ===\n"
      " 0: a\n"
      " 1: === node-2 ===\n"
      "10: b\n"
      " 0: \n"
      " 1: c\n"
      " 0: d: e\n";
  auto tasks = srun_task_outputs(out);
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0], "=== node-1 ===\na\n\nd: e\n");
  EXPECT_EQ(tasks[1], "=== node-2 ===\nc\n");
  EXPECT_EQ(tasks[2], "=== node-11 ===\nb\n");
  EXPECT_EQ(srun_output_by_task(out), tasks[0] + tasks[1] + tasks[2]);
  // "3:" with nothing after it: an empty line too (a trailing space trimmed on the way).
  EXPECT_EQ(srun_output_by_task("3: x\n3:\n3: y"), "x\n\ny\n");
}

TEST(SrunLabel, ALineWithoutALabelIsDroppedAndATextWithoutAnyIsKept) {
  EXPECT_EQ(srun_output_by_task("0: a\nstray line\n0x1: no\n0:no space\n1: b\n"), "a\nb\n");
  // An srun that labelled nothing (an older test double, a step of one task printed as is).
  const std::string plain = "=== llmwatch-ranks node=n processes=0 ===\n  12 frames\n";
  EXPECT_EQ(srun_output_by_task(plain), plain);
  EXPECT_EQ(srun_task_outputs(""), std::vector<std::string>{""});
  // A label too long to be a task's is no label.
  EXPECT_EQ(srun_output_by_task("123456789: a\n"), "123456789: a\n");
}

}  // namespace
}  // namespace llmwatch
