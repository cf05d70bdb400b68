// The finish phase alone: the heartbeat that status, /healthz and the metrics read, and steps
// that fail on their own without stopping the others.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cycle/phases.h"
#include "phase_fixture.h"
#include "store/keys.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

using testing::kNow;

TEST(FinishPhase, TheHeartbeatListsEveryProbeAndTheCyclesErrors) {
  PhaseFixture p;
  auto s = p.state(kNow);
  s.result.probes = {{"squeue", true, 0.25}, {"log:tr \"quoted\"", false, 1.5}};
  s.errors = {"log of tr: boom"};
  finish_phase(s);
  auto hb = nlohmann::json::parse(p.store->get(kv::kHeartbeat).value_or("{}"));
  EXPECT_EQ(hb["ts"], kNow);
  ASSERT_EQ(hb["probes"].size(), 2u);
  EXPECT_EQ(hb["probes"][1]["name"], "log:tr \"quoted\"");
  EXPECT_EQ(hb["probes"][1]["ok"], false);
  EXPECT_EQ(hb["probes"][1]["seconds"], 1.5);
  ASSERT_EQ(hb["errors"].size(), 1u);
  EXPECT_EQ(hb["errors"][0], "log of tr: boom");
  EXPECT_NE(p.events().find("error: log of tr: boom"), std::string::npos) << p.events();
}

// A metrics file that cannot be written is the cycle's error, and the heartbeat before it
// is still written.
TEST(FinishPhase, AMetricsFileThatCannotBeWrittenIsReported) {
  PhaseFixture p("", "");
  p.config.metrics_file = p.dir / "no-such-dir/llmwatch.prom";
  auto s = p.state(kNow);
  finish_phase(s);
  EXPECT_FALSE(std::filesystem::exists(p.config.metrics_file));
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_NE(s.errors[0].find("metrics file"), std::string::npos) << s.errors[0];
  EXPECT_NE(s.errors[0].find("no-such-dir"), std::string::npos) << s.errors[0];
  EXPECT_TRUE(p.store->get(kv::kHeartbeat).has_value());
  EXPECT_NE(p.events().find("error: metrics file: "), std::string::npos) << p.events();
}

// The hourly compaction also forgets a [[job]] taken out of the config, once its state is as old
// as keep_history: a job's state (its view, stacks, timing record) is not kept forever.
TEST(FinishPhase, CompactionForgetsAJobNoLongerConfigured) {
  PhaseFixture p("[[job]]\nname = \"tr\"\nlogs = [\"/nonexistent\"]\n", "keep_history = \"30d\"\n");
  const double old = kNow - 31 * 86400.0;
  p.store->put(kv::job_view("tr"), "{}", old);
  p.store->put(kv::job_view("retired"), "{}", old);
  p.store->put(kv::job_view("retired-lately"), "{}", kNow - 86400);
  auto s = p.state(kNow);
  finish_phase(s);
  EXPECT_TRUE(p.store->get(kv::job_view("tr")));
  EXPECT_FALSE(p.store->get(kv::job_view("retired")));
  EXPECT_TRUE(p.store->get(kv::job_view("retired-lately")));
}

}  // namespace
}  // namespace llmwatch
