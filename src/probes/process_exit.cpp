#include "probes/process_exit.h"

#include <string_view>

#include "probes/python_stacks.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace llmwatch {
namespace {

constexpr size_t kMaxBacktrace = 256 * 1024;

// The function a backtrace line names: "#12 0x000000000062c746 in Py_FinalizeEx () at x.c:1",
// or an inlined frame with no address, "#20 Py_FinalizeEx () at x.c:1"; "" for anything else.
std::string_view frame_function(std::string_view line) {
  line = trim(line);
  if (line.size() < 2 || line[0] != '#') return {};
  size_t at = 1;
  while (at < line.size() && line[at] >= '0' && line[at] <= '9') ++at;
  if (at == 1 || at >= line.size() || line[at] != ' ') return {};
  line = trim(line.substr(at));
  if (line.rfind("0x", 0) == 0) {
    auto in = line.find(" in ");
    if (in == std::string_view::npos) return {};
    line = line.substr(in + 4);
  }
  auto open = line.find(" (");
  return open == std::string_view::npos ? std::string_view{} : line.substr(0, open);
}

}  // namespace

std::string exiting_frame(const std::string& backtrace) {
  static constexpr std::string_view kExiting[] = {
      "Py_FinalizeEx", "_Py_Finalize", "Py_Exit", "exit", "__GI_exit", "__run_exit_handlers"};
  for (const auto& line : split(backtrace, '\n')) {
    auto function = frame_function(line);
    for (auto name : kExiting)
      if (function == name) return std::string(name);
  }
  return "";
}

std::string main_thread_exiting(int pid, Seconds timeout) {
  ProcessSpec spec;
  // Thread 1 is the main thread, the one that ran the program (gdb numbers them as /proc lists
  // them); it is the one that finalizes and exits.
  spec.argv = gdb_batch_argv(pid, {"thread 1", "bt"});
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  spec.max_output = kMaxBacktrace;
  auto r = run_process(spec);
  // gdb's exit status says nothing of the backtrace it printed (a detach warning fails it).
  return r.started && !r.timed_out ? exiting_frame(r.out) : "";
}

}  // namespace llmwatch
