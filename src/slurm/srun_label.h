#pragma once
// srun's --label output read back task by task. A step on several nodes (`llmwatch stacks` on
// each node of a job) writes through one srun, whose tasks' lines arrive as they come: a node's
// answer printed while another's is still arriving is interleaved with it line by line, so a
// block of one node's lines could hold another's. With --label every line carries its task
// ("0: ", " 7: " where there are ten tasks or more), and each task's lines are put back together.
#include <string>
#include <vector>

namespace llmwatch {

// Each task's lines, in the order srun wrote them, their labels taken off, a text a task (by
// task number); a line without a label is dropped. A text where no line has one (an srun that
// labelled nothing) is the one task's.
std::vector<std::string> srun_task_outputs(const std::string& labelled);
// The same, one task after another.
std::string srun_output_by_task(const std::string& labelled);

}  // namespace llmwatch
