#include "util/robust_stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace llmwatch {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  double hi = *mid;
  if (v.size() % 2) return hi;
  return (hi + *std::max_element(v.begin(), mid)) / 2;
}

double mad(const std::vector<double>& v, double m) {
  std::vector<double> d;
  d.reserve(v.size());
  for (double x : v) d.push_back(std::fabs(x - m));
  return median(std::move(d));
}

}  // namespace llmwatch
