#include "cycle/shown_speeds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace llmwatch {
namespace {

std::shared_ptr<const StragglerVerdict> verdict_of(std::vector<std::pair<std::string, double>> n) {
  StragglerVerdict v;
  for (const auto& [node, relative] : n) {
    NodeSpeed s;
    s.node = node;
    s.relative = relative;
    s.suspect = relative < 0.85;
    v.nodes.push_back(s);
  }
  return std::make_shared<const StragglerVerdict>(std::move(v));
}

TEST(ShownSpeeds, TheShownNodesSlowestFirst) {
  auto v = verdict_of({{"node-3", 0.71}, {"node-1", 0.99}, {"node-2", 1.0}});
  auto j = nlohmann::json::parse(shown_speeds_json("shown-a", v, 2));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["node"], "node-3");
  EXPECT_EQ(j[0]["relative"], 0.71);
  EXPECT_EQ(j[0]["suspect"], true);
  EXPECT_EQ(j[1]["node"], "node-1");
  EXPECT_EQ(j[1]["suspect"], false);
  EXPECT_EQ(shown_speeds_json("shown-a", nullptr, 0), "[]");
  // Never past the verdict's kept nodes, whatever count is asked.
  EXPECT_EQ(nlohmann::json::parse(shown_speeds_json("shown-a", v, 8)).size(), 3u);
}

// What is kept is the text of one verdict object: a new verdict of the job (rank 0 rewrote its
// summary), or another count shown, is written anew, never the text made before.
TEST(ShownSpeeds, ANewVerdictOrCountIsNeverAnsweredWithTheTextBefore) {
  auto before = verdict_of({{"node-1", 0.97}, {"node-2", 1.0}});
  EXPECT_EQ(nlohmann::json::parse(shown_speeds_json("shown-b", before, 2))[0]["relative"], 0.97);
  auto after = verdict_of({{"node-2", 0.62}, {"node-1", 1.0}});
  auto j = nlohmann::json::parse(shown_speeds_json("shown-b", after, 2));
  EXPECT_EQ(j[0]["node"], "node-2");
  EXPECT_EQ(j[0]["relative"], 0.62);
  EXPECT_EQ(nlohmann::json::parse(shown_speeds_json("shown-b", after, 1)).size(), 1u);
  // Another job with the same verdict object has its own text; the first job's stays right.
  EXPECT_EQ(shown_speeds_json("shown-c", before, 2), shown_speeds_json("shown-d", before, 2));
  EXPECT_EQ(nlohmann::json::parse(shown_speeds_json("shown-b", before, 2))[0]["node"], "node-1");
}

// A speed is shown to the hundredth, as the finding prints it: a rewrite that moves a node's
// score in the third digit gives the same view (not written to the state again), and the
// text is JSON whatever the score or the name.
TEST(ShownSpeeds, ASpeedIsShownToTheHundredth) {
  auto j = nlohmann::json::parse(shown_speeds_json("shown-e",
                                                   verdict_of({{"node-3", 0.7149},
                                                               {"node-1", 0.9951},
                                                               {"node-2", 1.0},
                                                               {"node-4", 0.0},
                                                               {"node-5", 0.0049},
                                                               {"node-6", 0.5},
                                                               {"node-7", 1.7}}),
                                                   8));
  std::vector<double> shown;
  for (const auto& n : j) shown.push_back(n["relative"]);
  EXPECT_EQ(shown, (std::vector<double>{0.71, 1, 1, 0, 0, 0.5, 1.7}));
  EXPECT_EQ(shown_speeds_json("shown-f", verdict_of({{"node-3", 0.7101}}), 1),
            shown_speeds_json("shown-g", verdict_of({{"node-3", 0.7149}}), 1));
  EXPECT_NE(shown_speeds_json("shown-f", verdict_of({{"node-3", 0.7101}}), 1),
            shown_speeds_json("shown-g", verdict_of({{"node-3", 0.7151}}), 1));
  auto odd = verdict_of({{"a\"b\\\x01\xff", NAN}, {"n", INFINITY}, {"m", -0.3}});
  auto k = nlohmann::json::parse(shown_speeds_json("shown-h", odd, 3));
  EXPECT_EQ(k[0]["node"], "a\"b\\\x01\xef\xbf\xbd");
  EXPECT_TRUE(k[0]["relative"].is_null());
  EXPECT_TRUE(k[1]["relative"].is_null());
  EXPECT_EQ(k[2]["relative"], 0);
}

}  // namespace
}  // namespace llmwatch
