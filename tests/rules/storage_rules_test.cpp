#include "rules/storage_rules.h"

#include <gtest/gtest.h>

#include "finding_kinds.h"
#include "rules/forecast.h"

namespace llmwatch {
namespace {

using testing::kinds;

StorageObservation fs(double used_fraction, double inode_fraction = 0.1) {
  StorageObservation o;
  o.path = "/ckpt";
  o.total_bytes = 1000ULL << 30;
  o.free_bytes =
      static_cast<std::uint64_t>((1 - used_fraction) * static_cast<double>(o.total_bytes));
  o.total_inodes = 1000000;
  o.free_inodes = static_cast<std::uint64_t>((1 - inode_fraction) * 1000000);
  return o;
}

StorageSettings storage_settings() {
  StorageSettings s;
  s.path = "/ckpt";
  return s;
}

std::vector<std::string> judge(const StorageSettings& s, const StorageObservation& o,
                               const std::vector<std::pair<double, double>>& series = {}) {
  return kinds(evaluate_storage(s, o, storage_figures(s, o, series)));
}

TEST(Forecast, TheilSenIgnoresCheckpointStepsAndCleanups) {
  std::vector<std::pair<double, double>> p;
  for (int i = 0; i < 40; ++i) p.emplace_back(i * 600.0, 1e12 + i * 600.0 * 1e6);  // 1 MB/s
  EXPECT_NEAR(*robust_rate(p), 1e6, 1);
  p[20].second += 5e12;  // a checkpoint landed and was then moved away
  p[30].second -= 3e12;  // a cleanup
  EXPECT_NEAR(*robust_rate(p), 1e6, 1e4);
  EXPECT_FALSE(robust_rate({{0, 1}, {10, 2}}));
}

TEST(StorageRules, SpaceThresholdsAgainstUsableCapacity) {
  auto s = storage_settings();
  EXPECT_TRUE(judge(s, fs(0.5)).empty());
  EXPECT_EQ(judge(s, fs(0.86)), std::vector<std::string>{"space"});
  auto warn = evaluate_storage(s, fs(0.86), storage_figures(s, fs(0.86), {}));
  EXPECT_EQ(warn[0].severity, Severity::Warning);
  EXPECT_EQ(evaluate_storage(s, fs(0.96), storage_figures(s, fs(0.96), {}))[0].severity,
            Severity::Critical);
  // "80% is the new 100%": 70% raw is 87.5% of a usable 80%.
  s.usable_fraction = 0.8;
  EXPECT_EQ(judge(s, fs(0.7)), std::vector<std::string>{"space"});
  // An absolute floor.
  auto t = storage_settings();
  t.min_free = 200ULL << 30;
  auto f = evaluate_storage(t, fs(0.81), storage_figures(t, fs(0.81), {}));
  ASSERT_EQ(kinds(f), std::vector<std::string>{"space"});
  EXPECT_NE(f[0].summary.find("below min_free"), std::string::npos);
}

TEST(StorageRules, InodesQuotaAndForecast) {
  auto s = storage_settings();
  EXPECT_EQ(judge(s, fs(0.1, 0.9)), std::vector<std::string>{"inodes"});
  auto o = fs(0.1);
  QuotaReport q;
  q.used_bytes = 95;
  q.limit_bytes = 100;
  q.grace = "6d";
  o.quota = q;
  auto f = evaluate_storage(s, o, storage_figures(s, o, {}));
  ASSERT_EQ(kinds(f), std::vector<std::string>{"quota"});
  EXPECT_EQ(f[0].severity, Severity::Critical);
  EXPECT_NE(f[0].summary.find("grace 6d"), std::string::npos);
  // 100 GB free at 10 GB/h: full in 10 h, under the 12 h default.
  std::vector<std::pair<double, double>> series;
  auto now = fs(0.9);
  double used_now = static_cast<double>(now.total_bytes - now.free_bytes);
  for (int i = 0; i < 10; ++i) series.emplace_back(i * 360.0, used_now - (9 - i) * 1e9);
  auto g = evaluate_storage(s, now, storage_figures(s, now, series));
  auto k = kinds(g);
  ASSERT_NE(std::find(k.begin(), k.end(), "forecast"), k.end());
}

TEST(StorageRules, FailedProbesAreUnknownNeverFull) {
  auto s = storage_settings();
  StorageObservation dead;
  dead.path = "/ckpt";
  dead.error = "/ckpt: statvfs did not answer within 60s";
  auto f = evaluate_storage(s, dead, {});
  ASSERT_EQ(kinds(f), std::vector<std::string>{"unknown"});
  EXPECT_EQ(f[0].severity, Severity::Unknown);
  auto o = fs(0.1);
  o.quota_error = "lfs: timed out after 30s";
  f = evaluate_storage(s, o, storage_figures(s, o, {}));
  ASSERT_EQ(kinds(f), std::vector<std::string>{"quota-unknown"});
  EXPECT_EQ(f[0].severity, Severity::Unknown);
}

}  // namespace
}  // namespace llmwatch
