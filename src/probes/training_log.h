#pragma once
// Understands what a training job prints: step lines (NeMo 2, NeMo 1 / Lightning progress
// bars, Megatron-LM, a user regex), checkpoint save start/end, and crash signatures.
// Progress is the step counter moving, never bytes written: a logging thread that keeps
// printing must not hide a stuck step.
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace llmwatch {

struct LogLine {
  std::optional<std::int64_t> step;
  std::optional<std::int64_t> max_steps;
  std::optional<double> step_time;  // seconds
  std::optional<double> loss;
  std::optional<double> consumed_samples;
  std::optional<double> global_batch_size;
  std::optional<double> peak_memory_bytes;
  std::optional<std::int64_t> skipped_iterations, nan_iterations;  // Megatron-LM counters
  std::optional<double> save_seconds;                              // "Save duration: 4.389s"
  std::optional<double> load_seconds;  // "Time spent in load_checkpoint: 9.712s"
  bool checkpoint_start = false;       // a save began
  bool checkpoint_end = false;         // a save finished
  bool evaluation = false;             // a validation/evaluation pass prints (no steps then)
  std::string crash;                   // a crash signature name, e.g. "nccl-timeout"
  // An error the process cannot go on from: a CUDA error CUDA calls sticky (an illegal memory
  // access, an uncorrectable ECC error: every later CUDA call returns it), or a line saying a
  // rank's process is being taken down or has ended (PyTorch's NCCL watchdog, std::terminate,
  // srun's "task N: Exited with exit code", torchrun's "failed (exitcode: 1) local_rank: 0").
  // No rank steps again. Set with `crash` empty, it marks the fatal crash a run already printed.
  bool crash_sticky = false;
  // Who printed the crash line, where its prefix says (probes/rank_line_times.h: "[rank5]:", or
  // srun --label's "5: " with crash_by_task): the rank whose process is looked for (#30).
  int crash_rank = -1;
  bool crash_by_task = false;
  // The launcher restarts its worker group in the job (torchrun or NVIDIA's ft_launcher with
  // --max-restarts: "Worker group FAILED. 2/3 attempts left; will restart worker group"): the
  // run starts again from its checkpoint, and its processes that printed a crash are gone.
  bool workers_restart = false;
  // slurmstepd's "*** JOB 7 ON node-1 CANCELLED AT ... ***": Slurm is ending the whole task (a
  // scancel, its time limit, a preemption or requeue), and signals its processes next. Not a
  // STEP's line: srun ends a job step that way when another of its tasks failed (a crash's).
  bool slurm_ends_task = false;
};

// slurmstepd's own line that Slurm cancels a job or one of its steps, in the task's output:
// "slurmstepd: error: *** JOB 7 ON node-1 CANCELLED AT 2026-11-24T10:00:00 DUE TO TIME LIMIT ***"
// (or "*** STEP 7.0 ON ..."). The parser and the post-mortem (rules/end_cause) read it alike.
enum class StepdCancel { None, Job, Step };
StepdCancel stepd_cancel(std::string_view line);

class TrainingLogParser {
 public:
  // user_regex: its first capture group is the step (empty: built-in formats only).
  explicit TrainingLogParser(const std::string& user_regex = "");
  LogLine parse(std::string_view line) const;

 private:
  std::optional<std::regex> user_;
};

}  // namespace llmwatch
