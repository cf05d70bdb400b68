#pragma once
// Which rank each of a job's Python processes on this node is, from the environment its
// launcher gave it (#30): RANK and WORLD_SIZE (torchrun, or a script that exports them), else
// SLURM_PROCID and SLURM_NTASKS (srun starting one task a rank). No process is stopped or
// attached to: /proc is read, as the job's owner where llmwatch is root (the step runs as the
// owner). `llmwatch stacks --ranks` prints it on each node of a job through srun --overlap, so
// that a rank whose fatal error was raised to Python can be seen gone while its peers wait.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace llmwatch {

// One process and the rank its environment names. rank and world are -1 where it names none.
struct RankProcess {
  int pid = 0;
  // Its parent: a rank's DataLoader workers and compile workers are its children and carry its
  // environment, its RANK included; they are not the rank.
  int ppid = 0;
  int rank = -1;
  int world = -1;
  // Which variables named it: "RANK" (the framework's rank), "SLURM_PROCID" (srun's task), or
  // "" where neither did (a launcher of its own, a helper process).
  std::string by;
  // Where the process of the rank asked about was looked into (`--rank`): the frame of its main
  // thread that says it is exiting ("Py_FinalizeEx", "exit": probes/process_exit.h);
  // "" where none was seen or it was not looked into. For every process: "do_exit" or
  // "do_coredump" where its exit is under way in the kernel (probes/kernel_exit.h).
  std::string exiting{};  // {}: brace lists that end before it need not name it
  // The job step it runs in, as slurmd listed it ("batch", "0"); "" where not known (no slurmd
  // answered, or an answer printed before stop 83).
  std::string step{};
};

// What one node answered: its name and the job's Python processes there (none: none found).
// `whole`: every process its header counts came back, each line read; a node whose answer was
// cut (a step killed at its timeout) or garbled says nothing of which ranks are gone.
struct NodeRanks {
  std::string node;
  std::vector<RankProcess> processes;
  bool whole = true;
};

// The environment a process was started with (/proc/PID/environ); empty where it cannot be read.
std::map<std::string, std::string> process_environment(int pid);
// Its parent's pid (/proc/PID/status); 0 where it cannot be read.
int parent_of(int pid);
// The rank the environment names, as above.
RankProcess process_rank(int pid, int ppid, const std::map<std::string, std::string>& env);

// The job's own steps (the batch script and what it starts without srun, salloc's interactive
// shell, the extern step) where an srun step runs Python on the same node: Slurm gives the batch
// step task 0's environment (SLURM_PROCID=0), as the srun step's task 0 has, so a Python
// launcher there that starts the ranks with srun claimed task 0 too. Such a process's
// SLURM_PROCID names no task: it is made a process of no rank (by ""), a launcher to the ranks.
// A RANK it carries still names a rank: torchrun run by the batch script beside a helper's srun
// step. Alone on their node, as where the batch script runs `python train.py`, nothing changes;
// nor where a step is not known (""). Reads each process's `step`.
void unname_tasks_beside_srun(std::vector<RankProcess>& processes);

// Which variable names the ranks among a node's processes: "SLURM_PROCID" where `by_task`
// (srun's --label) or where no process has a RANK, else "RANK".
std::string rank_variable(const std::vector<RankProcess>& processes, bool by_task);
// Whether `p` is its rank's own process among its node's `processes`: named by `by`, and not a
// child of a process that variable names the same rank (a rank's DataLoader and compile workers
// carry its environment, its RANK included; they are not the rank).
bool own_rank_process(const std::vector<RankProcess>& processes, const RankProcess& p,
                      const std::string& by);
// What `p` is to the ranks of its node, for a dump's reader: "rank" (its rank's own process, by
// rank_variable(processes, false)), "worker" (a child that carries its rank's name: a DataLoader
// or compile worker, or under srun an mp.spawn child), "other" (it names no rank by that
// variable: torchrun's elastic agent, a launcher or helper of the job's own).
std::string process_role(const std::vector<RankProcess>& processes, const RankProcess& p);
// Every rank's own process on the node, by rank_variable(processes, false).
std::vector<int> own_rank_pids(const std::vector<RankProcess>& processes);

// The most processes of one node looked into for an exit, one gdb each and all at once: a GPU
// node's ranks (8, 16 at most), not a CPU job's 128 tasks a node, whose gdbs, each reading its
// process's libraries' symbols, would load the node and the job's memory limit (the step runs
// in the job's cgroup). A node with more is not looked into; its ranks' exits stay unseen.
inline constexpr std::size_t kMaxExitLooks = 16;
// What is looked into where a fatal line named no rank (`--every-rank`): own_rank_pids, none
// where there are more than kMaxExitLooks.
std::vector<int> every_rank_look_pids(const std::vector<RankProcess>& processes);

// The process of rank `rank` among a node's: the one whose RANK names it (SLURM_PROCID where
// `by_task`, srun's --label, or where no process on the node has a RANK), not a child of
// another that does (its DataLoader workers); 0 where none or more than one is.
int rank_process_pid(const std::vector<RankProcess>& processes, int rank, bool by_task);

// What a node looks into for an exit where a fatal line named `rank`: that rank's own process
// (rank_process_pid) and, where `by_task` names a torchrun agent (srun's --label over one
// torchrun a node), the workers it launched (their own RANK processes, its children): the
// line may be any of theirs (not more than kMaxExitLooks of them: then the agent alone). None
// where rank_process_pid finds none.
std::vector<int> rank_look_pids(const std::vector<RankProcess>& processes, int rank, bool by_task);

// "=== llmwatch-ranks node=N processes=K ===" and a line per process:
// "pid=P ppid=Q rank=R world=W by=RANK" (rank and world -1, by "-" where none is named), then
// " step=0" where its step is known and " exiting=Py_FinalizeEx" where that was seen.
std::string format_node_ranks(const NodeRanks& node);
// Every node's block of such output (srun's tasks, in any order); a line that is not one of
// ours is skipped, a block with a bad node name too.
std::vector<NodeRanks> parse_node_ranks(const std::string& text);

}  // namespace llmwatch
