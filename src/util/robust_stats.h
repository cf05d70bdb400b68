#pragma once
// Robust statistics for noisy series (step times, ranks' compute, GPU clocks): the median and
// the median absolute deviation, which one outlier cannot move.
#include <span>
#include <vector>

namespace llmwatch {

// 0 for an empty series; the mean of the two middle values for an even count.
double median(std::vector<double> values);
// Median absolute deviation around `m`.
double mad(const std::vector<double>& values, double m);

// The same two for values already sorted ascending, with no copy and no selection: a job's 512
// ranks judged node by node, each node left out in turn, are 64 of each a look.
double sorted_median(std::span<const double> sorted);
double sorted_mad(std::span<const double> sorted, double m);

}  // namespace llmwatch
