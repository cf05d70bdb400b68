#include "rules/end_cause.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

EndEvidence ended(const std::string& state, std::vector<std::string> tail = {},
                  const std::string& exit_code = "") {
  EndEvidence e;
  e.task = "7";
  e.state = state;
  e.exit_code = exit_code;
  e.log_tail = std::move(tail);
  return e;
}

TEST(EndCause, SlurmsFinalStateDecidesFirst) {
  EXPECT_EQ(classify_end(ended("COMPLETED")).cls, EndClass::Completed);
  EXPECT_EQ(classify_end(ended("CANCELLED by 1000")).cls, EndClass::Cancelled);
  EXPECT_EQ(classify_end(ended("TIMEOUT")).cls, EndClass::Timeout);
  EXPECT_EQ(classify_end(ended("NODE_FAIL")).cls, EndClass::NodeFailure);
  EXPECT_EQ(classify_end(ended("PREEMPTED")).cls, EndClass::Preempted);
  EXPECT_EQ(classify_end(ended("OUT_OF_MEMORY")).cls, EndClass::OutOfMemory);
  // A traceback printed before a human's scancel does not make it a crash.
  EXPECT_EQ(classify_end(ended("CANCELLED", {"Traceback (most recent call last):"})).cls,
            EndClass::Cancelled);
}

TEST(EndCause, TheLogsSayWhyAFailedTaskFailed) {
  // The crash: an NCCL WARN naming a peer, then a DistBackendError traceback.
  auto v = classify_end(
      ended("FAILED",
            {"node-2:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2 with "
             "error 12",
             "Traceback (most recent call last):",
             "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970"},
            "1:0"));
  EXPECT_EQ(v.cls, EndClass::Network);
  EXPECT_NE(v.summary.find("NCCL or network error"), std::string::npos) << v.summary;
  EXPECT_EQ(v.evidence.front(), "Slurm: task 7 FAILED, exit code 1:0");
  EXPECT_NE(v.evidence[1].find("NCCL WARN"), std::string::npos);
  // An OOM ends in NCCL aborts on the other ranks: the OOM is the cause.
  EXPECT_EQ(classify_end(ended("FAILED", {"torch.OutOfMemoryError: CUDA out of memory.",
                                          "NCCL WARN Cuda failure 'out of memory'"}))
                .cls,
            EndClass::OutOfMemory);
  EXPECT_EQ(classify_end(ended("FAILED", {"RuntimeError: CUDA error: an illegal memory access "
                                          "was encountered"}))
                .cls,
            EndClass::GpuError);
  EXPECT_EQ(
      classify_end(ended("FAILED", {"Traceback (most recent call last):", "KeyError: 'input_ids'"}))
          .cls,
      EndClass::Software);
  // Slurm saw it fail, and nothing printed why: a silent failure, still a crash.
  EXPECT_EQ(classify_end(ended("FAILED", {"step 10"}, "1:0")).cls, EndClass::SilentFailure);
}

// Slurm forgot the task (MinJobAge passed, or llmwatch looked late): the logs and the exit
// code are all there is.
TEST(EndCause, WhenSlurmNoLongerKnowsTheTask) {
  EXPECT_EQ(classify_end(ended("", {}, "0:0")).cls, EndClass::Completed);
  EXPECT_EQ(classify_end(ended("", {})).cls, EndClass::Unknown);
  auto real =
      split(testing::read_file(testing::fixture("training-logs/nccl-watchdog-timeout.log")), '\n');
  EXPECT_EQ(classify_end(ended("", real)).cls, EndClass::Network);
  EndEvidence done = ended("");
  done.reached_max_steps = true;
  EXPECT_EQ(classify_end(done).cls, EndClass::Completed);
}

// Slurm has forgotten the task and there is no accounting: slurmstepd's own line in the log
// says what Slurm did, before any traceback the ranks printed as they were killed (#26.4).
TEST(EndCause, SlurmstepdsLineDecidesBeforeATraceback) {
  const std::string sigterm[] = {
      "Traceback (most recent call last):",
      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4711 got signal: 15"};
  auto with = [&](const std::string& stepd) {
    return classify_end(ended("", {sigterm[0], sigterm[1], stepd}));
  };
  EXPECT_EQ(with("slurmstepd: error: *** JOB 7 ON node-1 CANCELLED AT 2026-11-24T10:00:00 ***").cls,
            EndClass::Cancelled);
  EXPECT_EQ(with("slurmstepd: error: *** JOB 7 ON node-1 CANCELLED AT 2026-11-24T10:00:00 DUE "
                 "TO TIME LIMIT ***")
                .cls,
            EndClass::Timeout);
  EXPECT_EQ(with("slurmstepd: error: *** STEP 7.0 ON node-1 CANCELLED AT 2026-11-24T10:00:00 "
                 "DUE TO PREEMPTION ***")
                .cls,
            EndClass::Preempted);
  EXPECT_EQ(with("slurmstepd: error: *** JOB 7 ON node-1 CANCELLED AT 2026-11-24T10:00:00 DUE "
                 "TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
                .cls,
            EndClass::NodeFailure);
  // Without it, the traceback is all there is.
  EXPECT_EQ(classify_end(ended("", {sigterm[0], sigterm[1]})).cls, EndClass::Software);
}

// What a step loop counts: the run failed by itself, whether the logs or Slurm said so.
TEST(EndCause, AFailureIsTheRunsOwnWhateverSaidIt) {
  EXPECT_TRUE(
      is_failure(classify_end(ended("OUT_OF_MEMORY", {}, "0:125")).cls));  // nothing printed
  EXPECT_TRUE(is_failure(classify_end(ended("FAILED", {}, "1:0")).cls));   // nor here
  EXPECT_TRUE(
      is_failure(classify_end(ended("FAILED", {"CUDA error: an illegal memory access"})).cls));
  EXPECT_TRUE(is_failure(classify_end(ended("", {"Traceback (most recent call last):"})).cls));
  // A shutdown traceback in a completed run, a person's cancel, the time limit, a preemption,
  // a node Slurm lost, and an end nothing explains are not.
  EXPECT_FALSE(
      is_failure(classify_end(ended("COMPLETED", {"Traceback (most recent call last):"})).cls));
  EXPECT_FALSE(is_failure(
      classify_end(ended("CANCELLED by 1000", {"Traceback (most recent call last):"})).cls));
  EXPECT_FALSE(is_failure(classify_end(ended("TIMEOUT")).cls));
  EXPECT_FALSE(is_failure(classify_end(ended("PREEMPTED")).cls));
  EXPECT_FALSE(is_failure(classify_end(ended("NODE_FAIL")).cls));
  EXPECT_FALSE(is_failure(classify_end(ended("")).cls));
}

TEST(EndCause, OnlyNodeShapedCausesAskForAttribution) {
  EXPECT_TRUE(may_be_hardware(EndClass::Network));
  EXPECT_TRUE(may_be_hardware(EndClass::GpuError));
  EXPECT_TRUE(may_be_hardware(EndClass::NodeFailure));
  EXPECT_FALSE(may_be_hardware(EndClass::OutOfMemory));
  EXPECT_FALSE(may_be_hardware(EndClass::Software));
  EXPECT_FALSE(may_be_hardware(EndClass::Unknown));
}

}  // namespace
}  // namespace llmwatch
