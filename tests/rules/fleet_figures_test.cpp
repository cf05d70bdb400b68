#include "rules/fleet_figures.h"

#include <gtest/gtest.h>

#include <random>

namespace llmwatch {
namespace {

std::vector<NodeFigure> fleet_of(const std::vector<double>& values) {
  std::vector<NodeFigure> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back({"node-" + std::to_string(i + 1), values[i]});
  return out;
}

TEST(FleetFigures, TheNodeFarUnderTheMedianIsNamedAndNoOther) {
  FleetFigureSettings s{"gemm/gflops"};
  auto f = judge_fleet_figure(s, fleet_of({500, 505, 498, 350, 502, 497}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "node-4");
  EXPECT_EQ(f[0].kind, "fleet-slow");
  EXPECT_EQ(f[0].severity, Severity::Warning);
  EXPECT_EQ(f[0].summary, "node-4: gemm/gflops 350, 0.70× the fleet median 499 (6 nodes)");
}

TEST(FleetFigures, TooFewNodesOrNoPositiveMedianSayNothing) {
  FleetFigureSettings s{"gemm/gflops"};
  EXPECT_TRUE(judge_fleet_figure(s, fleet_of({500, 505, 100, 502})).empty());
  EXPECT_TRUE(judge_fleet_figure(s, fleet_of({0, 0, 0, -5, 0, 0})).empty());
}

// Noise property: 1,000 healthy fleets of 8-64 nodes whose figures vary ±10% (log-normal) and
// where one node in each is 10% low (within what fleet_below allows) name no node; a node at
// 0.5-0.75× is always named (at 0.5-0.8×, 3 in 1,000 small noisy fleets are missed).
TEST(FleetFigures, HealthyNoiseNamesNoNodeAndASlowOneIsAlwaysNamed) {
  std::mt19937 rng(28);
  std::lognormal_distribution<double> jitter(0, 0.04);
  std::uniform_int_distribution<int> size(8, 64);
  std::uniform_real_distribution<double> slow(0.5, 0.75);
  FleetFigureSettings s{"gemm/gflops"};
  int false_findings = 0, missed = 0;
  for (int fleet = 0; fleet < 1000; ++fleet) {
    std::vector<double> values(static_cast<size_t>(size(rng)));
    for (auto& v : values) v = 500 * std::clamp(jitter(rng), 0.9, 1.1);
    values[0] = 500 * 0.9;
    false_findings += static_cast<int>(judge_fleet_figure(s, fleet_of(values)).size());
    values[1] = 500 * slow(rng);
    auto f = judge_fleet_figure(s, fleet_of(values));
    missed += f.size() == 1 && f[0].subject == "node-2" ? 0 : 1;
  }
  EXPECT_EQ(false_findings, 0);
  EXPECT_EQ(missed, 0);
}

TEST(FleetFigures, StoredFiguresMergeAndReadBackByAge) {
  auto first = merge_node_figures("", {{"gemm/gflops", 500}}, 100);
  ASSERT_TRUE(first);
  EXPECT_FALSE(merge_node_figures(*first, {{"gemm/gflops", 500}}, 100)) << "nothing changed";
  auto second = merge_node_figures(*first, {{"stream/gbps", 2900}}, 200);
  ASSERT_TRUE(second);
  EXPECT_EQ(read_node_figures(*second, 0),
            (std::map<std::string, double>{{"gemm/gflops", 500}, {"stream/gbps", 2900}}));
  EXPECT_EQ(read_node_figures(*second, 150),
            (std::map<std::string, double>{{"stream/gbps", 2900}}));
  EXPECT_TRUE(read_node_figures("not json", 0).empty());
  EXPECT_TRUE(read_node_figures(R"({"a": [1], "b": ["x", 2], "c": 5})", 0).empty());
}

}  // namespace
}  // namespace llmwatch
