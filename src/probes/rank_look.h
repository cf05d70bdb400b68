#pragma once
// One rank's process looked into once (#30): whether it is exiting (process_exit.h) and, where
// asked, its Python stack as `llmwatch stacks` takes it, from a single gdb: the look after a
// fatal line attaches to the ranks anyway, and its stacks serve as the hang's first dump
// (cycle/checks/rank_exit_look.cpp), so that the dump after the hang is found is its second
// and each process is paused once for both, not twice. With py-spy installed (the dump's
// tool then), gdb's backtrace and py-spy's dump are taken one after the other.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/python_stacks.h"
#include "probes/rank_processes.h"
#include "util/subprocess.h"

namespace llmwatch {

struct RankLook {
  std::string exiting;                // the frame that says it is exiting; "" where none was seen
  std::optional<ProcessStack> stack;  // where a stack was asked for
};

// Process `pid`: its exit where `exit`, its stack where `stack`, within `timeout` (each).
RankLook look_into_rank(int pid, bool exit, bool stack, Seconds timeout);

// gdb's output for {"thread 1", "bt", "py-bt"} (`exit`) or {"py-bt"}: the exiting frame of the
// backtrace before py-bt's "Traceback" (none from a gdb that timed out), and the stack from it.
RankLook read_rank_look(int pid, const ProcessResult& gdb, bool exit, bool stack);

// What the look's step printed on every node (srun --label, `stacks --ranks --with-stacks`): each
// node's ranks block, read only from before its first stack block (a line of a stack is never
// read as a rank's), and the stacks after it.
struct LookOutput {
  std::vector<NodeRanks> answers;
  std::vector<ProcessStack> stacks;
};
LookOutput read_look_output(const std::string& srun_out);

}  // namespace llmwatch
