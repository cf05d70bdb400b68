#pragma once
// Hang forensics: the Python stacks of a job's processes on this node, and what they say
// together. Taken with `py-spy dump --native` where py-spy is installed, else with gdb and
// CPython's gdb helper (`py-bt`; Debian's python3.X-dbg provides it). The dump command runs on
// each node of a hung job (`srun --overlap`, llmwatch stacks) before it is cancelled; the
// supervisor groups the ranks by their innermost frame: "23 in allreduce wait; 1 in
// DataLoader.__next__" (the odd one out is usually the culprit).
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/subprocess.h"

namespace llmwatch {

struct ProcessStack {
  std::string node;
  int pid = 0;
  std::string comm;
  std::string text;       // the dump as the tool printed it (bounded)
  std::string innermost;  // "allreduce_wait (train.py:4)", "" when no Python frame was found
  // What the process is to the ranks of its node (rank_processes.h: process_role): "rank",
  // "worker", "other"; "" where the dump did not say (one taken before stop 82).
  std::string role{};  // {}: brace lists that end before it need not name it
};

// One process of a job and the step it runs in, as slurmd lists it: "batch" (the batch script
// and what it started without srun), "extern", or a step's number ("0"); "" where no slurmd
// answered and the process's environment said it is the job's.
struct JobProcess {
  int pid = 0;
  std::string step;
  bool operator==(const JobProcess&) const = default;
};

// The Python processes of Slurm job `job_id` on this node, by pid: as slurmd lists them
// (`scontrol listpids JOB NODE`), or, where no slurmd answers, those with SLURM_JOB_ID in their
// environment.
std::vector<JobProcess> job_python_processes(const std::string& job_id, const std::string& node);
// The processes of `scontrol listpids` output; nullopt when it is not that table.
std::optional<std::vector<JobProcess>> parse_listpids(const std::string& out);
// PyTorch's NCCL flight recorder: where a rank was started with TORCH_NCCL_DEBUG_INFO_PIPE_FILE
// (and a trace buffer), its watchdog reads the FIFO <stem><rank>.pipe, and anything written
// there makes it dump its recent collectives to TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>. Pokes
// that FIFO of process `pid`: only a FIFO owned by the process's own user, never through a
// link, never blocking. Returns one line for the dump ("flight recorder: rank 3 asked to dump
// to /scratch/fr_3"), or "" when the process has no such pipe configured.
std::string trigger_flight_recorder(int pid);
// Who runs the dumper on process `pid`, and what gdb may auto-load (#26.7): no file a user can
// write is loaded by a process with more rights than that user. Privileged (root): a user's
// process is dumped as its owner (`prefix` is setpriv's argv) and may load what the owner
// could run anyway; root's own process loads only from the system's debug directories and
// from its executable's directory when no one but root can write there. Unprivileged, the
// process is the same user's. `safe_path` is gdb's auto-load safe-path.
inline constexpr const char* kSystemGdbDirs = "/usr/lib/debug:/usr/share/gdb/auto-load";
struct GdbIdentity {
  std::vector<std::string> prefix;
  std::string safe_path;
};
GdbIdentity gdb_identity_for(int pid, bool privileged);
// gdb attached to process `pid` in batch mode, running `commands` ("py-bt", "bt"), as
// gdb_identity_for says: the argv to run.
std::vector<std::string> gdb_batch_argv(int pid, const std::vector<std::string>& commands);
// Its command name (/proc/PID/comm, "python3"); "" where it is gone.
std::string process_comm(int pid);
// One process's stack; the text says why when it could not be taken.
ProcessStack dump_python_stack(int pid, Seconds timeout);
// Whether dumps are taken with py-spy (on PATH), not gdb's py-bt.
bool dumps_with_py_spy();
// Where CPython's py-bt begins in gdb's output (what comes before it is gdb's own chatter, or
// another command's output).
inline constexpr const char* kPyBtStart = "Traceback (most recent call first):";
// The stack block of process `pid` from what its dumper (`tool`: gdb, py-spy) printed.
ProcessStack stack_from_output(int pid, const ProcessResult& r, const std::string& tool);
// What `llmwatch stacks` takes of one rank: first its NCCL flight recorder is asked to dump
// (before gdb stops the process), then its stack; the flight recorder's line, when it has
// one, heads the block, and says where the trace goes.
ProcessStack rank_forensics(int pid, Seconds timeout);

// "=== llmwatch-stack node=N pid=P role=R comm=C ===" blocks (role where known), as `llmwatch
// stacks` prints them (the header at the start of a line; a dump's own lines are indented).
inline constexpr const char* kStackHeader = "=== llmwatch-stack ";
std::string format_stacks(const std::vector<ProcessStack>& stacks);
std::vector<ProcessStack> parse_stacks(const std::string& text);
// The innermost Python frame of a py-bt or py-spy dump.
std::string innermost_frame(const std::string& dump);
// Every Python frame of a dump, innermost first: "allreduce_wait (train.py:4)".
std::vector<std::string> python_frames(const std::string& dump);
// The frames of a dump's training thread: the main thread (py-spy dumps every thread).
std::vector<std::string> training_frames(const std::string& dump);
// Whether any of `stacks` shows a rank's training thread: only such a dump can confirm a hang
// (a second one of a dump without is never waited for). A process a dump marks as no rank's
// (role "other": torchrun's agent, which loops in its monitor whatever its workers do) counts
// neither here nor in stacks_moved; where a dump marks no process a rank, every one counts.
bool shows_training_frames(const std::vector<ProcessStack>& stacks);
// Confirmation of a hang: true when two dumps some seconds apart show a rank's training
// thread, seen in both, in other frames. Ranks stuck in a collective show the same frames
// each time; a process in one dump only proves nothing.
bool stacks_moved(const std::vector<ProcessStack>& before, const std::vector<ProcessStack>& after);
// "2 processes: 1 in allreduce_wait (train.py:4) [node-1]; 1 in __next__ (loader.py:9)
// [node-2 pid 77]"; groups largest first, and where a group is alone, where it is. Where the
// dump marks its ranks, only theirs are grouped, and the rest counted after them ("; besides
// the ranks, 64 workers and 1 process of no rank").
std::string summarize_stacks(const std::vector<ProcessStack>& stacks);

}  // namespace llmwatch
