#include "probes/training_log.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

#include "probes/rank_line_times.h"
#include "util/regex_window.h"

namespace llmwatch {
namespace {

// string_view::find, with the needle's second byte checked before comparing the rest: in a
// log line most letters are the first letter of some key, and a memcmp call at each of them
// cost more than the search.
size_t find(std::string_view line, std::string_view needle) {
  if (needle.size() < 2 || line.size() < needle.size()) return line.find(needle);
  const char* p = line.data();
  const char* last = line.data() + (line.size() - needle.size());  // the last possible start
  while (p <= last) {
    p = static_cast<const char*>(std::memchr(p, needle[0], static_cast<size_t>(last - p) + 1));
    if (!p) break;
    if (p[1] == needle[1] && std::memcmp(p + 2, needle.data() + 2, needle.size() - 2) == 0)
      return static_cast<size_t>(p - line.data());
    ++p;
  }
  return std::string_view::npos;
}

bool line_contains(std::string_view line, std::string_view needle) {
  return find(line, needle) != std::string_view::npos;
}

bool contains_nocase(std::string_view line, std::string_view needle) {
  if (needle.size() > line.size()) return false;
  for (size_t i = 0; i + needle.size() <= line.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && std::tolower(static_cast<unsigned char>(line[i + k])) ==
                                    static_cast<unsigned char>(needle[k]))
      ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// The number after `key` and any of ' :=' (e.g. "global_step: 45", "global_step=97.00").
std::optional<double> number_after(std::string_view line, std::string_view key) {
  size_t pos = find(line, key);
  if (pos == std::string_view::npos) return std::nullopt;
  pos += key.size();
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == ':' || line[pos] == '=')) ++pos;
  size_t end = pos;
  while (end < line.size() &&
         (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.' ||
          line[end] == '-' || line[end] == '+' || line[end] == 'e' || line[end] == 'E' ||
          line[end] == 'n' || line[end] == 'a' || line[end] == 'i' || line[end] == 'f'))
    ++end;
  if (end == pos) return std::nullopt;
  // from_chars: no copy, no locale; a leading '+' is the one form strtod took that it does not.
  if (line[pos] == '+') ++pos;
  double v = 0;
  auto [stop, ec] = std::from_chars(line.data() + pos, line.data() + end, v);
  if (stop == line.data() + pos) return std::nullopt;
  if (ec == std::errc::result_out_of_range)  // rare: strtod says what it overflows to
    v = std::strtod(std::string(line.substr(pos, end - pos)).c_str(), nullptr);
  return v;
}

std::optional<std::int64_t> as_step(std::optional<double> v) {
  if (!v || !(*v >= 0) || *v > 9e15) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

// Megatron-LM: " iteration      100/  500000 | consumed samples: ..."
void parse_megatron(std::string_view line, LogLine& out) {
  size_t pos = line.find(" iteration ");
  if (pos == std::string_view::npos || !line_contains(line, "elapsed time per iteration")) return;
  pos += 11;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  std::int64_t step = 0;
  size_t digits = 0;
  while (pos < line.size() && std::isdigit(static_cast<unsigned char>(line[pos])) && digits < 16)
    step = step * 10 + (line[pos++] - '0'), ++digits;
  // 16 digits or more is not a step count (and would overflow: found by fuzzing).
  if (!digits || digits > 15) return;
  out.step = step;
  if (pos < line.size() && line[pos] == '/')
    out.max_steps = as_step(number_after(line.substr(pos + 1), ""));
  if (auto ms = number_after(line, "elapsed time per iteration (ms)")) out.step_time = *ms / 1000.0;
  out.loss = number_after(line, "lm loss");
  out.consumed_samples = number_after(line, "consumed samples");
  out.global_batch_size = number_after(line, "global batch size");
  out.skipped_iterations = as_step(number_after(line, "number of skipped iterations"));
  out.nan_iterations = as_step(number_after(line, "number of nan iterations"));
}

// The CUDA errors that leave the process "in an inconsistent state": any further CUDA work
// returns the same error, and the process must be terminated (CUDA Runtime API, cudaError_t:
// 700, 702, 710, 714-719, 214). Their runtime and driver wordings both.
bool sticky_cuda_error(std::string_view line) {
  static constexpr std::string_view kSticky[] = {
      "an illegal memory access was encountered",
      "the launch timed out and was terminated",
      "device-side assert triggered",
      "hardware stack error",
      "an illegal instruction was encountered",
      "misaligned address",
      "operation not supported on global/shared address space",
      "invalid program counter",
      "unspecified launch failure",
      "uncorrectable ECC error encountered",
      "CUDA_ERROR_ILLEGAL_ADDRESS",
      "CUDA_ERROR_LAUNCH_FAILED",
      "CUDA_ERROR_ECC_UNCORRECTABLE",
      "CUDA_ERROR_ASSERT",
  };
  for (auto words : kSticky)
    if (line_contains(line, words)) return true;
  return false;
}

// A line that says a rank's process is being ended or has ended, whatever its trainer would do:
// PyTorch's collective watchdog when it aborts a failed or timed-out collective (its default
// async error handling: "To avoid data inconsistency, we are taking the entire process down.",
// then "... watchdog thread terminated with exception: ..." from that thread), the C++
// runtime's std::terminate, and srun's word that a task exited ("srun: error: node-2: task 1:
// Exited with exit code 3", "... tasks 0-3: Killed"), which srun prints at once while the other
// tasks run on (Slurm 22.05 on the local cluster: the line 0 s after the exit, srun itself 25 s
// later, when the last task ended), and torchrun's elastic agent (or NVIDIA's ft_launcher,
// built on it) when a worker it started exited with an error: "failed (exitcode: 1) local_rank:
// 0 (pid: 4242) of binary: /usr/bin/python3", printed as it sees the exit, before it stops the
// other workers on its node (30 s for them to end). Unlike an NCCL error raised to Python as a
// DistBackendError, which an elastic trainer may catch and rebuild its communicators from, no
// rank steps past these.
bool process_taken_down(std::string_view line) {
  if (line_contains(line, "srun: error: "))
    return line_contains(line, ": task ") || line_contains(line, ": tasks ");
  if (line_contains(line, "failed (exitcode: ")) return line_contains(line, " local_rank: ");
  return line_contains(line, "taking the entire process down") ||
         line_contains(line, "watchdog thread terminated with exception") ||
         line_contains(line, "terminate called after throwing");
}

}  // namespace

TrainingLogParser::TrainingLogParser(const std::string& user_regex) {
  if (!user_regex.empty())
    user_ = std::regex(user_regex, std::regex::ECMAScript | std::regex::optimize);
}

StepdCancel stepd_cancel(std::string_view line) {
  if (!line_contains(line, " CANCELLED AT ")) return StepdCancel::None;
  if (line_contains(line, "*** JOB ")) return StepdCancel::Job;
  return line_contains(line, "*** STEP ") ? StepdCancel::Step : StepdCancel::None;
}

LogLine TrainingLogParser::parse(std::string_view line) const {
  LogLine out;
  // NeMo 2 lines and NeMo 1 / Lightning progress bars
  if (size_t at = find(line, "global_step"); at != std::string_view::npos) {
    out.step = as_step(number_after(line.substr(at), "global_step"));
    out.step_time = number_after(line, "train_step_timing in s");
    out.loss = number_after(line, "reduced_train_loss");
    if (!out.loss) out.loss = number_after(line, "train_loss");
    out.consumed_samples = number_after(line, "consumed_samples");
    out.global_batch_size = number_after(line, "global_batch_size");
    out.peak_memory_bytes = number_after(line, "peak_memory_usage");
    if (auto it = line.find("iteration "); it != std::string_view::npos) {
      auto slash = line.find('/', it);
      if (slash != std::string_view::npos && slash < it + 30)
        if (auto max = as_step(number_after(line.substr(slash + 1), ""))) out.max_steps = *max + 1;
    }
  } else if (line_contains(line, " iteration ")) {
    parse_megatron(line, out);
  }
  if (user_ && !out.step) {
    std::match_results<std::string_view::const_iterator> m;
    auto window = regex_window(line);
    if (std::regex_search(window.begin(), window.end(), m, *user_) && m.size() > 1)
      out.step = as_step(std::strtod(m[1].str().c_str(), nullptr));
  }
  if (out.step) return out;  // a step line is not also a crash or checkpoint line

  if (contains_nocase(line, "saving checkpoint") || line_contains(line, "Checkpoint save start") ||
      line_contains(line, "Async checkpoint save"))
    out.checkpoint_start = true;
  if (line_contains(line, "Save duration")) out.save_seconds = number_after(line, "Save duration");
  if (line_contains(line, "Time spent in load_checkpoint"))
    out.load_seconds = number_after(line, "Time spent in load_checkpoint");
  if (line_contains(line, "Global Checkpoint Save") ||
      contains_nocase(line, "successfully saved checkpoint") ||
      contains_nocase(line, "checkpoint saved"))
    out.checkpoint_end = true, out.checkpoint_start = false;

  // Evaluation passes print no training steps for minutes: Lightning/NeMo "Validation
  // DataLoader 0: 45%|", Hugging Face "***** Running Evaluation *****", "Validating" and
  // "evaluating" progress lines. (Not a "validation loss at iteration" summary: it is printed
  // once the pass is over, and would only widen the allowance when it matters.)
  if (line_contains(line, "Validation DataLoader") || line_contains(line, "Running Evaluation") ||
      line_contains(line, "Validating") || contains_nocase(line, "evaluating"))
    out.evaluation = true;
  if (stepd_cancel(line) == StepdCancel::Job) {
    out.slurm_ends_task = true;
    return out;
  }
  if (line_contains(line, "Watchdog caught collective operation timeout"))
    out.crash = "nccl-timeout";
  else if (line_contains(line, "CUDA out of memory") || line_contains(line, "OutOfMemoryError"))
    out.crash = "cuda-oom";
  else if (line_contains(line, "CUDA error") || line_contains(line, "CUDA Error"))
    out.crash = "cuda-error", out.crash_sticky = sticky_cuda_error(line);
  else if (line_contains(line, "NCCL error") || line_contains(line, "ncclUnhandledCudaError") ||
           line_contains(line, "ncclSystemError"))
    out.crash = "nccl-error";
  else if (line_contains(line, "NVRM: Xid"))
    out.crash = "xid";
  else if (line_contains(line, "Traceback (most recent call last)"))
    out.crash = "python-traceback";
  // The launcher's restart of its worker group (torch/distributed/elastic/agent/server/api.py).
  if (line_contains(line, "will restart worker group")) out.workers_restart = true;
  if (out.crash != "xid" && out.crash != "python-traceback" && process_taken_down(line)) {
    out.crash_sticky = true;
    // The watchdog's teardown line names no error of its own (the lines before it did), but
    // it is a collective's: said alone, it is the crash. std::terminate's names one only when
    // it ends a DistBackendError; otherwise it, and srun's, mark the fatal crash already held.
    if (out.crash.empty() &&
        (line_contains(line, "entire process down") || line_contains(line, "DistBackendError")))
      out.crash = "nccl-error";
  }
  if (!out.crash.empty()) {
    const LinePrinter by = line_printer(line);
    out.crash_rank = by.rank, out.crash_by_task = by.srun_task;
  }
  return out;
}

}  // namespace llmwatch
