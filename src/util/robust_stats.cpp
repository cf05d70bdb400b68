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

double sorted_median(std::span<const double> s) {
  if (s.empty()) return 0;
  std::size_t mid = s.size() / 2;
  return s.size() % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

double sorted_mad(std::span<const double> s, double m) {
  if (s.empty()) return 0;
  // The deviations in ascending order are a merge walking out from m both ways: the k-th
  // smallest is reached in k steps.
  std::size_t right = static_cast<std::size_t>(std::lower_bound(s.begin(), s.end(), m) - s.begin());
  std::size_t left = right;  // s[left - 1] is the next one below m
  std::size_t want = s.size() / 2;
  double prev = 0, cur = 0;
  for (std::size_t k = 0; k <= want; ++k) {
    prev = cur;
    bool take_left = right == s.size() || (left > 0 && m - s[left - 1] <= s[right] - m);
    cur = take_left ? m - s[--left] : s[right++] - m;
  }
  return s.size() % 2 ? cur : (prev + cur) / 2;
}

}  // namespace llmwatch
