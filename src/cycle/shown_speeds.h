#pragma once
// The "node_speeds" of a job's view: the slowest nodes a verdict shows (#28), as JSON, made once
// per verdict. At 1,000 jobs of 64 nodes, writing every job's 8 slowest nodes every cycle was a
// tenth of the cycle's instructions, though 7 of 10 verdicts are the ones of the cycle before
// (kept while rank 0 has not rewritten its summary: checks/straggler_judge.cpp).
#include <cstddef>
#include <memory>
#include <string>

#include "rules/straggler.h"

namespace llmwatch {

// `[{"node":..,"relative":..,"suspect":..},...]` for the first `shown` nodes of `verdict`
// (slowest first), each speed to the hundredth, `[]` without one. The same verdict object and count
// give the text made before for `job`; anything else is written anew.
std::string shown_speeds_json(const std::string& job,
                              const std::shared_ptr<const StragglerVerdict>& verdict,
                              std::size_t shown);

}  // namespace llmwatch
