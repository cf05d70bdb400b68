#pragma once
// Which nodes a restarted run must avoid. Only the attributed suspects (most likely first)
// and nodes that are out of service anyway; never every node of the run, and never so many
// that the run no longer fits its partition: a 64-node run on a partition with 5% spare
// nodes excluding all 64 could never be scheduled again. Pure.
#include <string>
#include <vector>

#include "rules/attribution.h"

namespace llmwatch {

struct ExclusionChoice {
  std::vector<std::string> nodes;  // suspects to exclude
  std::string note;                // what was left out and why, "" when nothing
};

// `spare`: usable nodes of the partition beyond what the run needs (-1: unknown, then at
// most `max_unknown_spare` suspects are excluded). `avoided`: nodes the run cannot land on
// anyway (out of service, or excluded by its submitter); excluding one again takes no room.
ExclusionChoice choose_exclusions(const std::vector<Suspect>& suspects, int spare,
                                  const std::vector<std::string>& avoided = {},
                                  int max_unknown_spare = 2);

}  // namespace llmwatch
