#pragma once
// The one way llmwatch runs another program: argv only (never a shell), an environment,
// a hard timeout that kills the whole process group, and captured output with a size cap.
// Every probe and action goes through run_process, so a hanging squeue or nvidia-smi can
// never hang llmwatch.
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace llmwatch {

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH unless it has a '/'
  std::map<std::string, std::string> env;  // added to (or replacing) the environment
  // Children get a scrubbed environment (no secrets). Only llmwatch's own successor job, which
  // must expand the same ${VARS} in its config, inherits everything.
  bool inherit_environment = false;
  std::chrono::milliseconds timeout{30'000};
  std::size_t max_output = 16 * 1024 * 1024;  // per stream; the rest is read and dropped
  // When set, stdout goes here piece by piece as it is read (and not into the result, nor
  // under max_output): a 239 MiB `squeue --json` is parsed without being held.
  std::function<void(std::string_view)> on_out;
  std::string stdin_data;  // written to the child's stdin, then closed
  std::string cwd;         // empty: inherit
};

struct ProcessResult {
  bool started = false;    // false: the program could not be run at all (see error)
  bool timed_out = false;  // killed (with its process group) after spec.timeout
  int exit_code = -1;      // valid when exited normally
  int signal = 0;          // the signal that ended it, if any
  std::string out, err;
  bool out_truncated = false, err_truncated = false;
  std::string error;  // why it did not start, or why it was given up on after timing out
  double seconds = 0;

  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
  // "squeue: timed out after 30s", "sbatch: exit 1: <first stderr line>", ...
  std::string describe(const std::string& what) const;
};

ProcessResult run_process(const ProcessSpec& spec);

}  // namespace llmwatch
