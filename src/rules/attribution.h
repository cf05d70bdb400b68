#pragma once
// Which node a crash was the fault of, and why. Evidence, each with a weight:
//   - a node Slurm lost, drained or took down during the run, or a node-check verdict of
//     CRITICAL on it (the caller lists these, with the reason);          0.9
//   - an address named as the peer in an NCCL/Gloo error, mapped to a node by NodeAddr; 0.6
//   - the host that printed an NCCL WARN/ERROR line (host:pid:tid [dev] NCCL WARN ...); 0.4
//   - a [rankN] line with a GPU or NCCL error, mapped to a node by the task's layout;   0.3
// A watchdog timeout names a victim, not a culprit (every healthy rank times out waiting
// for the faulty one), so it is no evidence. Weights combine as independent evidence,
// 1 - prod(1 - w). Only nodes of the task can be suspects. Pure.
#include <map>
#include <string>
#include <vector>

#include "probes/end_evidence.h"

namespace llmwatch {

struct Suspect {
  std::string node;
  double confidence = 0;
  std::vector<std::string> why;  // "printed NCCL WARN: <line>", at most 3
};

struct NodeTrouble {
  std::string node;
  std::string why;  // "NODE_FAIL", "drained during the run: <reason>", "node-check CRITICAL: ..."
};

// The suspects with confidence >= kSuspectThreshold, most likely first.
inline constexpr double kSuspectThreshold = 0.35;
// A node that only printed a network error, when the evidence names another: never a suspect.
inline constexpr double kReporterCeiling = 0.2;
std::vector<Suspect> attribute_crash(const std::vector<std::string>& lines,
                                     const TaskLayout& layout,
                                     const std::vector<NodeTrouble>& troubles);

// "node-2 (0.40: printed NCCL WARN)", for summaries.
std::string describe_suspects(const std::vector<Suspect>& suspects);

}  // namespace llmwatch
