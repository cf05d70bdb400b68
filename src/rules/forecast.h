#pragma once
// A growth rate that a checkpoint landing (a step up) or a cleanup (a step down) does not
// swing: the Theil–Sen estimator, the median of the slopes between all pairs of points.
#include <optional>
#include <utility>
#include <vector>

namespace llmwatch {

// points: (time s, value); at most the last 64 are used. nullopt with fewer than 3 points
// or under a minute of history.
std::optional<double> robust_rate(const std::vector<std::pair<double, double>>& points);

}  // namespace llmwatch
