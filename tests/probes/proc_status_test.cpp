// A field of /proc/PID/status, by its whole key: the rank look's parent and exit reads.
#include "probes/proc_status.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace llmwatch {
namespace {

TEST(ProcStatus, AFieldIsReadByItsWholeKey) {
  const std::string status =
      testing::read_file(testing::fixture("proc-exit/python3-killed-zombie-status.txt"));
  EXPECT_EQ(proc_status_value(status, "PPid"), "14052");
  EXPECT_EQ(proc_status_value(status, "State"), "Z (zombie)");
  EXPECT_EQ(proc_status_value(status, "ShdPnd"), "0000000000000100");
  // A key is never matched by its prefix, nor a value read from a key's middle.
  EXPECT_EQ(proc_status_value("SigPnd:\t1\n", "Sig"), "");
  EXPECT_EQ(proc_status_value("XPPid:\t9\n", "PPid"), "");
  EXPECT_EQ(proc_status_value("PPid:\t7", "PPid"), "7");  // no newline at its end
  EXPECT_EQ(proc_status_value("", "PPid"), "");
}

}  // namespace
}  // namespace llmwatch
