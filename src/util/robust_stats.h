#pragma once
// Robust statistics for noisy series (step times, ranks' compute, GPU clocks): the median and
// the median absolute deviation, which one outlier cannot move.
#include <vector>

namespace llmwatch {

// 0 for an empty series; the mean of the two middle values for an even count.
double median(std::vector<double> values);
// Median absolute deviation around `m`.
double mad(const std::vector<double>& values, double m);

}  // namespace llmwatch
