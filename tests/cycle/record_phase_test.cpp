// The record phase alone: it resolves what cleared (only where a check looked) and keeps what
// the next cycle needs, each job's progress, last task, series and view.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cycle/phases.h"
#include "phase_fixture.h"
#include "store/keys.h"

namespace llmwatch {
namespace {

using testing::PhaseFixture;

using testing::kNow;
const std::string kJob = "[[job]]\nname = \"tr\"\n";

TEST(RecordPhase, AClearedFindingResolvesOnlyWhereItsScopeWasEvaluated) {
  PhaseFixture p(kJob);
  (void)p.store->observe(make_finding("job:tr", "tr", "hung", Severity::Critical, "stuck"),
                         kNow - 60);
  {
    auto s = p.state(kNow);  // the job-log check could not look: no scope
    record_phase(s);
    EXPECT_EQ(s.result.resolved, 0);
    EXPECT_TRUE(p.firing("job:tr/hung"));
  }
  auto s = p.state(kNow + 30);
  s.scopes = {"job:tr"};
  record_phase(s);
  EXPECT_EQ(s.result.resolved, 1);
  EXPECT_FALSE(p.firing("job:tr/hung"));
  EXPECT_NE(p.events().find("resolved: job:tr/hung resolved after"), std::string::npos)
      << p.events();
}

// A [[job]] taken out of the config is no longer judged: its firing findings (and those of a
// finding's failed action) are resolved as no longer watched, whether or not any check looked,
// and a configured job's are left to its own scope. A retired label with a '/' is no
// configured job's either.
TEST(RecordPhase, AFindingOfAJobNoLongerConfiguredIsResolved) {
  PhaseFixture p(kJob);
  for (const char* label : {"tr", "retired", "tr2", "tr/old"})
    (void)p.store->observe(
        make_finding(std::string("job:") + label, label, "hung", Severity::Critical, "stuck"),
        kNow - 60);
  (void)p.store->observe(
      make_finding("job:retired/hung", "retired", "restart-failed", Severity::Critical, "x"),
      kNow - 60);
  auto s = p.state(kNow);  // no check looked at anything
  record_phase(s);
  EXPECT_TRUE(p.firing("job:tr/hung"));
  EXPECT_FALSE(p.firing("job:retired/hung"));
  EXPECT_FALSE(p.firing("job:retired/hung/restart-failed"));
  EXPECT_FALSE(p.firing("job:tr2/hung"));
  EXPECT_EQ(s.result.resolved, 3);
  EXPECT_NE(p.events().find("job:retired/hung no longer watched: its [[job]] is not in the "
                            "config"),
            std::string::npos)
      << p.events();
  // "tr/old" reads as the configured "tr"'s: its own scope resolves it once tr is looked at.
  EXPECT_TRUE(p.firing("job:tr/old/hung"));
}

TEST(RecordPhase, WhatTheNextCycleNeedsIsKept) {
  PhaseFixture p(kJob);
  auto s = p.state(kNow);
  auto& w = p.watch(s, "tr", 42);
  w.progress.task = "42";
  w.progress.step = 120;
  w.advances = {{120, kNow - 5}};
  record_phase(s);
  EXPECT_EQ(p.store->progress("tr").step, 120);
  ASSERT_TRUE(p.store->last_job("tr").has_value());
  EXPECT_EQ(p.store->last_job("tr")->job_id, 42);
  EXPECT_EQ(p.store->progress_steps("tr").size(), 1u);
  auto view = nlohmann::json::parse(p.store->get(kv::job_view("tr")).value_or("{}"));
  ASSERT_EQ(view["entries"].size(), 1u);
  EXPECT_EQ(view["entries"][0]["id"], "42");
  EXPECT_EQ(view["entries"][0]["state"], "RUNNING");
}

// The series gets a job's step at most once a minute (a row per step was 720 MiB a day at
// 1,000 jobs), whatever the interval.
TEST(RecordPhase, TheProgressSeriesGetsAtMostOneRowAMinute) {
  PhaseFixture p(kJob);
  for (int c = 0; c < 5; ++c) {
    double now = kNow + 30 * c;
    auto s = p.state(now);
    auto& w = p.watch(s, "tr", 42);
    w.progress = p.store->progress("tr");
    w.progress.task = "42";
    w.progress.step = 100 + 3 * c;
    w.advances = {{100 + 3 * c, now - 1}};
    record_phase(s);
  }
  EXPECT_EQ(p.store->progress_steps("tr").size(), 3u);  // at 0, 60 and 120 s
}

}  // namespace
}  // namespace llmwatch
