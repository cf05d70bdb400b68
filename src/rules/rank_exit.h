#pragma once
// Whether the rank that printed a fatal error has ended while its task runs on (#30). A rank
// whose NCCL error was raised to Python may catch it and go on, so that line alone leaves the
// run two step intervals; once the rank's own process is seen gone, its line is one no rank goes
// on from (as srun's "task 5: Exited" would say, where srun's output is not in the log), and the
// run gets the 8 s such a line gets.
//
// Gone is said only on whole evidence, since it shortens what a run is allowed: every node of
// the task answered in full, the ranks named agree on one world size and name each rank once,
// and this one is not there: the one rank missing, or one of several where the job has no
// process but its ranks and their workers (srun started each rank; no elastic agent that may be
// starting them again). Anything less (a node silent, a rank
// named twice as under torchrun by SLURM_PROCID, ranks the environment does not name) is
// unknown, which changes nothing. A rank's process that is there but whose interpreter is
// exiting (probes/process_exit.h: its program ended, and it lingers in a thread join or a
// destructor; probes/kernel_exit.h: in the kernel's exit or core dump) has ended as well: no
// step comes from it. A process exiting in the kernel is no launcher either.
#include <string>
#include <vector>

#include "probes/rank_processes.h"

namespace llmwatch {

enum class RankSeen { Running, Ended, Unknown };

struct RankExit {
  RankSeen seen = RankSeen::Unknown;
  std::string why;  // "rank 5's process has ended; the other 15 ranks still run (all 4 nodes
                    // answered)"
};

// Who printed the line, as its prefix said (probes/rank_line_times.h): `srun_task` for srun's
// --label ("5: "), which is SLURM_PROCID; else a framework's "[rank5]:", which is RANK where the
// processes name one, else SLURM_PROCID (srun starting a task a rank). `rank` -1: the line
// named none: a rank whose process is exiting (every rank's was looked into: `stacks
// --every-rank`), however many others ended too, or else the one rank gone, is it (its peers
// wait on it), or the first of several gone where no launcher is left to start them again;
// several gone beside a launcher in the ranks' step (torchrun's agent) and none exiting:
// unknown.
RankExit rank_exit(const std::vector<NodeRanks>& answers,
                   const std::vector<std::string>& task_nodes, int rank, bool srun_task);

}  // namespace llmwatch
