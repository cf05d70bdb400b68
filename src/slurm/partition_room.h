#pragma once
// How much room a task's partition leaves a restart that keeps it off suspect nodes (#30: "never
// so many that the run no longer fits its partition"), and what the task keeps off by itself
// (sbatch --exclude), which is no room at all.
#include <optional>
#include <string>
#include <vector>

#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"

namespace llmwatch {

class SlurmClient;

// Usable nodes of the task's partition (`usable_in_partition`, counted once a cycle for every
// job) beyond its size, less the usable ones of them it excludes itself: a restart that also
// excluded as many suspects as the partition had spare left the run waiting for nodes it could
// never have (ReqNodeNotAvail). An unknown own list subtracts nothing. -1: the size is unknown.
int spare_nodes(int usable_in_partition, const std::vector<SlurmNode>& nodes, const SlurmJob& task);
// The same, counting the partition's usable nodes: for one restart, not every job of a cycle.
int spare_nodes(const std::vector<SlurmNode>& nodes, const SlurmJob& task);

// What the task excludes itself: squeue --json says (task.excluded_nodes); squeue's text does not,
// and scontrol, asked for this task alone, does ("" for none). nullopt when neither says.
std::optional<std::string> own_excluded_nodes(const SlurmJob& task, SlurmClient& slurm);

}  // namespace llmwatch
