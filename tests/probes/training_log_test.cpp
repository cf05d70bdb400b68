#include "probes/training_log.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "util/strings.h"

namespace llmwatch {
namespace {

std::vector<LogLine> parse_file(const std::string& name) {
  TrainingLogParser parser;
  std::vector<LogLine> out;
  for (const auto& line : split(testing::read_file(testing::fixture(name)), '\n'))
    out.push_back(parser.parse(line));
  return out;
}

TEST(TrainingLog, NeMo2StepLines) {
  auto lines = parse_file("training-logs/nemo2-llama3-8b.log");
  const LogLine& l = lines[1];
  ASSERT_TRUE(l.step);
  EXPECT_EQ(*l.step, 45);
  EXPECT_DOUBLE_EQ(*l.step_time, 12.43);
  EXPECT_DOUBLE_EQ(*l.loss, 12.01);
  EXPECT_EQ(*l.max_steps, 50);
  EXPECT_DOUBLE_EQ(*l.consumed_samples, 5888);
  EXPECT_DOUBLE_EQ(*l.global_batch_size, 128);
  EXPECT_DOUBLE_EQ(*l.peak_memory_bytes, 70833405952);
  EXPECT_DOUBLE_EQ(*lines[0].load_seconds, 9.712);
  std::optional<double> save;
  for (const auto& x : lines)
    if (x.save_seconds) save = x.save_seconds;
  ASSERT_TRUE(save);
  EXPECT_DOUBLE_EQ(*save, 4.389);
  EXPECT_FALSE(lines[0].step);  // the checkpoint load line
  bool saw_save_end = false;
  for (const auto& x : lines) saw_save_end |= x.checkpoint_end;
  EXPECT_TRUE(saw_save_end);
}

// Numbers are read without a copy (from_chars): every form a log prints still reads as before.
// The keys are found in one pass over the line's underscores: a key inside another, a key
// twice, a key at the very end, each read as a search for it would.
TEST(TrainingLog, KeysInsideOthersTwiceOrCutAtTheEnd) {
  TrainingLogParser p;
  auto l = p.parse(
      "train_loss=1.5 xglobal_step=7 reduced_train_loss=2.5 train_step_timing in s=3.25 "
      "global_step=8 global_batch_size=512 consumed_samples=4096 peak_memory_usage=1e9 "
      "global_batch_size=1");
  ASSERT_TRUE(l.step);
  EXPECT_EQ(*l.step, 7);   // the first "global_step", even inside "xglobal_step"
  EXPECT_EQ(l.loss, 2.5);  // reduced_train_loss wins over train_loss
  EXPECT_EQ(l.step_time, 3.25);
  EXPECT_EQ(l.global_batch_size, 512);  // the first one
  EXPECT_EQ(l.consumed_samples, 4096);
  EXPECT_EQ(l.peak_memory_bytes, 1e9);
  auto only_train = p.parse("global_step: 3 | train_loss: 0.75 | train_step_timing in s");
  EXPECT_EQ(only_train.loss, 0.75);
  EXPECT_FALSE(only_train.step_time);  // the key ends the line: no number
  EXPECT_FALSE(p.parse("global_step: 3 train_step_timing in").step_time);
}

TEST(TrainingLog, NumbersInEveryForm) {
  TrainingLogParser p;
  auto loss = [&](const std::string& v) {
    return p.parse("global_step: 5 | reduced_train_loss: " + v).loss;
  };
  EXPECT_DOUBLE_EQ(*loss("2.312"), 2.312);
  EXPECT_DOUBLE_EQ(*loss("+3"), 3);
  EXPECT_DOUBLE_EQ(*loss("-1.5e-3"), -1.5e-3);
  EXPECT_TRUE(std::isnan(*loss("nan")));
  EXPECT_TRUE(std::isinf(*loss("inf")));
  EXPECT_TRUE(std::isinf(*loss("1e999")));  // overflow: infinite, as strtod says
  EXPECT_DOUBLE_EQ(*loss("1e-999"), 0);     // underflow: zero
  EXPECT_FALSE(loss("abc").has_value());
  EXPECT_EQ(p.parse("global_step=97.00").step, 97);
}

TEST(TrainingLog, NeMo1ProgressBar) {
  auto lines = parse_file("training-logs/nemo1-progress-bar.log");
  ASSERT_TRUE(lines[0].step);
  EXPECT_EQ(*lines[0].step, 97);
  EXPECT_DOUBLE_EQ(*lines[0].step_time, 3.6);
  EXPECT_DOUBLE_EQ(*lines[0].loss, 7.33);
}

TEST(TrainingLog, NcclWatchdogTimeoutIsACrashSignature) {
  auto lines = parse_file("training-logs/nccl-watchdog-timeout.log");
  EXPECT_EQ(lines[0].crash, "nccl-timeout");
  EXPECT_FALSE(lines[0].step);
}

TEST(TrainingLog, MegatronLine) {
  TrainingLogParser parser;
  auto l = parser.parse(
      " iteration      100/  500000 | consumed samples:        51200 | elapsed time per iteration "
      "(ms): 1234.5 | "
      "learning rate: 3.000E-04 | global batch size:   512 | lm loss: 7.012345E+00 | loss scale: "
      "1.0 | grad norm: "
      "1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |");
  ASSERT_TRUE(l.step);
  EXPECT_EQ(*l.step, 100);
  EXPECT_EQ(*l.max_steps, 500000);
  EXPECT_DOUBLE_EQ(*l.step_time, 1.2345);
  EXPECT_NEAR(*l.loss, 7.012345, 1e-9);
  EXPECT_DOUBLE_EQ(*l.consumed_samples, 51200);
  EXPECT_DOUBLE_EQ(*l.global_batch_size, 512);
  EXPECT_EQ(*l.skipped_iterations, 0);
  EXPECT_EQ(*l.nan_iterations, 0);
}

TEST(TrainingLog, OtherSignaturesAndCheckpoints) {
  TrainingLogParser parser;
  EXPECT_EQ(parser.parse("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate").crash,
            "cuda-oom");
  EXPECT_EQ(
      parser.parse("RuntimeError: CUDA error: an illegal memory access was encountered").crash,
      "cuda-error");
  EXPECT_EQ(parser.parse("Traceback (most recent call last):").crash, "python-traceback");
  EXPECT_EQ(
      parser.parse("NVRM: Xid (PCI:0000:10:1c): 79, pid=1896, GPU has fallen off the bus.").crash,
      "xid");
  EXPECT_TRUE(parser.parse("saving checkpoint at iteration     500 to /ckpt").checkpoint_start);
  EXPECT_TRUE(
      parser.parse("  successfully saved checkpoint at iteration     500 to /ckpt").checkpoint_end);
  EXPECT_EQ(parser.parse("[rank0] heartbeat: still waiting in ALLREDUCE (step 7)").step,
            std::nullopt);
}

TEST(TrainingLog, NanLossIsParsedAsNan) {
  TrainingLogParser parser;
  auto l = parser.parse(
      "Training epoch 0, iteration 3/9 | global_step: 3 | reduced_train_loss: nan | "
      "train_step_timing in s: 1.0");
  ASSERT_TRUE(l.loss);
  EXPECT_TRUE(std::isnan(*l.loss));
}

// #30: a CUDA error the process cannot go on from (CUDA calls it sticky) is told apart from
// one an API call returns and a trainer may catch: the first kind ends every rank's steps.
TEST(TrainingLog, ACudaErrorNoProcessGoesOnFromIsSticky) {
  TrainingLogParser parser;
  for (const char* sticky : {"RuntimeError: CUDA error: an illegal memory access was encountered",
                             "[rank3]: RuntimeError: CUDA error: unspecified launch failure",
                             "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                             "RuntimeError: CUDA error: device-side assert triggered",
                             "RuntimeError: CUDA error: misaligned address",
                             "CUDA Error: CUDA_ERROR_ILLEGAL_ADDRESS in cuCtxSynchronize"}) {
    auto l = parser.parse(sticky);
    EXPECT_EQ(l.crash, "cuda-error") << sticky;
    EXPECT_TRUE(l.crash_sticky) << sticky;
  }
  for (const char* other : {"RuntimeError: CUDA error: invalid argument",
                            "RuntimeError: CUDA error: an illegal memory access",  // cut short
                            "NCCL error: unhandled cuda error, an illegal memory access was "
                            "encountered"}) {
    EXPECT_FALSE(parser.parse(other).crash_sticky) << other;
  }
}

// #30: the lines PyTorch's NCCL watchdog prints as it takes its process down (its default async
// error handling), std::terminate's and srun's word that a task exited say no rank goes on; an
// NCCL error raised to Python, or the watchdog's warning before it decides, does not.
TEST(TrainingLog, AProcessTakenDownIsACrashItDoesNotGoOnFrom) {
  TrainingLogParser parser;
  struct Case {
    const char* line;
    const char* crash;
  };
  for (const Case& c : {
           Case{"[rank1]:[E1010 06:10:06 ProcessGroupNCCL.cpp:758] [Rank 1] To avoid data "
                "inconsistency, we are taking the entire process down.",
                "nccl-error"},
           Case{"[E ProcessGroupNCCL.cpp:852] [Rank 16] NCCL watchdog thread terminated with "
                "exception: NCCL error: remote process exited or there was a network error, "
                "NCCL version 2.19.3",
                "nccl-error"},
           Case{"[rank0]:[E709 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
                "Process group watchdog thread terminated with exception: [Rank 0] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE)",
                "nccl-timeout"},
           Case{"terminate called after throwing an instance of 'c10::DistBackendError'",
                "nccl-error"},
           Case{"terminate called after throwing an instance of 'std::runtime_error'", ""},
           // As srun printed it on the local cluster while the job's other task ran on.
           Case{"srun: error: node-2: task 1: Exited with exit code 3", ""},
           Case{"srun: error: node-[1-2]: tasks 0-3: Killed", ""},
           // torchrun's elastic agent, as PyTorch 1.x and 2.4 print it, and NVIDIA's ft_launcher.
           Case{"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
                "local_rank: 0 (pid: 17966) of binary: /opt/conda/bin/python",
                ""},
           Case{"E1202 03:10:14.512000 140 torch/distributed/elastic/multiprocessing/api.py:869] "
                "failed (exitcode: -6) local_rank: 5 (pid: 4242) of binary: /usr/bin/python3",
                ""},
           Case{"[ERROR] [ft_launcher@node-3] failed (exitcode: 1) local_rank: 0 (pid: 77) of "
                "binary: /usr/bin/python3",
                ""},
       }) {
    auto l = parser.parse(c.line);
    EXPECT_EQ(l.crash, c.crash) << c.line;
    EXPECT_TRUE(l.crash_sticky) << c.line;
  }
  for (const char* other :
       {"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
        "process exited or there was a network error",
        "[Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
        "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2) ran for 600012 "
        "milliseconds before timing out.",
        "INFO: the watchdog thread terminated cleanly",
        "srun: error: Unable to create step for job 7: Job/step already completing or completed",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        "WARNING: download failed (exitcode: 22) for shard 7, retrying",
        "[default] Worker group FAILED. 3/3 attempts left; will restart worker group"}) {
    EXPECT_FALSE(parser.parse(other).crash_sticky) << other;
  }
}

// #30: who printed a crash line, where its prefix says: the rank whose process is looked for.
TEST(TrainingLog, ACrashLineSaysWhichRankPrintedIt) {
  TrainingLogParser parser;
  auto torch = parser.parse("[rank12]: torch.distributed.DistBackendError: NCCL error in: x");
  EXPECT_EQ(torch.crash, "nccl-error");
  EXPECT_EQ(torch.crash_rank, 12);
  EXPECT_FALSE(torch.crash_by_task);
  auto label = parser.parse(" 3: RuntimeError: CUDA error: invalid argument");
  EXPECT_EQ(label.crash_rank, 3);
  EXPECT_TRUE(label.crash_by_task);
  auto nested = parser.parse("1: [rank9]: torch.distributed.DistBackendError: NCCL error");
  EXPECT_EQ(nested.crash_rank, 9);
  EXPECT_FALSE(nested.crash_by_task);
  auto none = parser.parse("torch.distributed.DistBackendError: NCCL error");
  EXPECT_EQ(none.crash_rank, -1);
  // A clock is not a label, and a line that is no crash names no one.
  EXPECT_EQ(parser.parse("12:34:56 NCCL error").crash_rank, -1);
  EXPECT_EQ(parser.parse("[rank4]: loading data").crash_rank, -1);
}

// #30: torchrun (or ft_launcher) with --max-restarts restarts its worker group in the job: the
// processes that printed the crash are gone and the run loads its checkpoint again.
TEST(TrainingLog, ALauncherRestartingItsWorkersIsSaid) {
  TrainingLogParser parser;
  for (const char* restart :
       {"INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 "
        "attempts left; will restart worker group",
        "I1202 03:10:15.001000 140 torch/distributed/elastic/agent/server/api.py:855] [default] "
        "Worker group FAILED. 2/3 attempts left; will restart worker group",
        "[INFO] [ft_launcher@node-3] [default] Worker group FAILED. 3/5 attempts left; will "
        "restart worker group"}) {
    auto l = parser.parse(restart);
    EXPECT_TRUE(l.workers_restart) << restart;
    EXPECT_TRUE(l.crash.empty()) << restart;
    EXPECT_FALSE(l.crash_sticky) << restart;
  }
  for (const char* other :
       {"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
        "(pid: 17966) of binary: /opt/conda/bin/python",
        "[default] Worker group FAILED. 0/3 attempts left; giving up", "restart worker"})
    EXPECT_FALSE(parser.parse(other).workers_restart) << other;
}

TEST(TrainingLog, UserRegexFirstGroupIsTheStep) {
  TrainingLogParser parser(R"(step=(\d+))");
  EXPECT_EQ(*parser.parse("[train] step=1234 loss=2.0").step, 1234);
  EXPECT_FALSE(parser.parse("[train] nothing").step);
}

TEST(TrainingLog, BinaryGarbageAndHugeLinesDoNotConfuseIt) {
  TrainingLogParser parser;
  std::string garbage(100000, '\xff');
  garbage[500] = '\0';
  EXPECT_FALSE(parser.parse(garbage).step);
  EXPECT_FALSE(parser.parse("global_step: -5").step);
  EXPECT_FALSE(parser.parse("global_step: ").step);
}

}  // namespace
}  // namespace llmwatch
