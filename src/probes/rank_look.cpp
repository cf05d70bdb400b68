#include "probes/rank_look.h"

#include "probes/process_exit.h"
#include "slurm/srun_label.h"

namespace llmwatch {

RankLook read_rank_look(int pid, const ProcessResult& gdb, bool exit, bool stack) {
  RankLook out;
  if (exit && gdb.started && !gdb.timed_out) {
    // Only the native backtrace: a frame py-bt prints is never a native one, but a file or
    // function a user named "exit" is not read as one either.
    out.exiting = exiting_frame(gdb.out.substr(0, gdb.out.find(kPyBtStart)));
  }
  if (stack) out.stack = stack_from_output(pid, gdb, "gdb");
  return out;
}

RankLook look_into_rank(int pid, bool exit, bool stack, Seconds timeout) {
  if (!stack) return {exit ? main_thread_exiting(pid, timeout) : "", std::nullopt};
  if (dumps_with_py_spy()) {
    // py-spy reads the stack without gdb: two tools, one after the other (one tracer at a time).
    RankLook out{exit ? main_thread_exiting(pid, timeout) : "", std::nullopt};
    out.stack = dump_python_stack(pid, timeout);
    return out;
  }
  ProcessSpec spec;
  // Thread 1 is the main thread: its native backtrace says whether it is exiting, and py-bt
  // then prints its Python stack, as a dump's gdb would (it attaches on that thread).
  std::vector<std::string> commands = {"py-bt"};
  if (exit) commands = {"thread 1", "bt", "py-bt"};
  spec.argv = gdb_batch_argv(pid, commands);
  spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  spec.max_output = 512 * 1024;
  return read_rank_look(pid, run_process(spec), exit, true);
}

LookOutput read_look_output(const std::string& srun_out) {
  LookOutput out;
  for (const auto& node : srun_task_outputs(srun_out)) {
    // The first line that begins with a stack header (a newline put before the first line
    // makes its place the header's own).
    const std::size_t at = ("\n" + node).find("\n" + std::string(kStackHeader));
    for (auto& a : parse_node_ranks(node.substr(0, at))) out.answers.push_back(std::move(a));
    if (at != std::string::npos)
      for (auto& st : parse_stacks(node.substr(at))) out.stacks.push_back(std::move(st));
  }
  return out;
}

}  // namespace llmwatch
