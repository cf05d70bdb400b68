#include "rules/forecast.h"

#include "rules/training_rules.h"
#include "util/robust_stats.h"

namespace llmwatch {

std::optional<double> robust_rate(const std::vector<std::pair<double, double>>& all) {
  size_t start = all.size() > 64 ? all.size() - 64 : 0;
  std::vector<std::pair<double, double>> p(all.begin() + static_cast<long>(start), all.end());
  if (p.size() < 3 || p.back().first - p.front().first < 60) return std::nullopt;
  std::vector<double> slopes;
  slopes.reserve(p.size() * p.size() / 2);
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j)
      if (p[j].first > p[i].first)
        slopes.push_back((p[j].second - p[i].second) / (p[j].first - p[i].first));
  if (slopes.empty()) return std::nullopt;
  return median(slopes);
}

}  // namespace llmwatch
