#include "views/job_view.h"

#include <gtest/gtest.h>

#include "rules/finding.h"
#include "store/store.h"
#include "test_util.h"

namespace llmwatch {
namespace {

JobSettings llama8b() {
  JobSettings j;
  j.name = "tr";
  j.seq_length = 8192;
  j.gpus = 8;
  j.gpu = "H100";
  j.precision = "fp8";
  j.layers = 32;
  j.hidden_size = 4096;
  j.ffn_hidden_size = 14336;
  j.attention_heads = 32;
  j.query_groups = 8;
  j.vocab_size = 128256;
  j.train_tokens = 1e12;
  return j;
}

TEST(JobView, FiguresFromTheLogAndTheModelFacts) {
  JobProgress p;
  TrainingLogParser parser;
  double t = 0;
  for (int s = 1; s <= 10; ++s)
    apply_lines(p,
                {"iteration " + std::to_string(s) + "/99 | global_batch_size: 128 | global_step: " +
                 std::to_string(s) + " | reduced_train_loss: 2.5 | train_step_timing in s: 12.39"},
                parser, t += 12.39);
  auto f = job_figures(llama8b(), p, t);
  EXPECT_NEAR(f["tokens_per_s"].get<double>(), 84631, 1);
  EXPECT_NEAR(f["mfu"].get<double>() * 100, 30.93, 0.05);  // FLOPs from the architecture
  EXPECT_NEAR(f["eta_s"].get<double>(), 90 * 12.39, 0.01);
  EXPECT_NEAR(f["time_to_train_tokens_s"].get<double>() / 86400, 136.76, 0.01);
  EXPECT_DOUBLE_EQ(f["loss"].get<double>(), 2.5);
  // Without model facts only what the log says.
  auto bare = job_figures(JobSettings{}, p, t);
  EXPECT_FALSE(bare.contains("tokens_per_s"));
  EXPECT_FALSE(bare.contains("mfu"));
  EXPECT_TRUE(bare.contains("eta_s"));
}

// Steps every 10 s from t=1000 to 1500 (step 0 to 50), then a hang found at 1510.
void ten_second_steps_then_a_hang(Store& store) {
  for (int t = 1000; t <= 1500; t += 10) store.add_progress("tr", t, (t - 1000) / 10, 10.0, 2.0);
  store.add_event(1510, "finding", "tr", "critical", "job:tr/hung: 3_1: no step progress for 10m");
}

TEST(JobView, HistoryLostTimeEffectiveRatioAndAdvice) {
  testing::TempDir dir;
  Store store(dir.path);
  JobSettings job = llama8b();
  // Steps every 10 s from t=1000 to 1500, a failure at 1510, training again from 1600.
  ten_second_steps_then_a_hang(store);
  for (int t = 1600; t <= 2000; t += 10)
    store.add_progress("tr", t, 50 + (t - 1600) / 10, 10.0, 2.0);
  JobProgress p;
  p.save_seconds = 40;
  p.checkpoint_interval = 3600;
  store.put("progress:tr", p.to_json(), 2000);
  auto j = build_job(job, store, 2000);
  const auto& h = j["history"];
  ASSERT_EQ(h["failures"].size(), 1u);
  EXPECT_DOUBLE_EQ(h["failures"][0]["lost_s"].get<double>(),
                   100);  // last step 1500 → first step 1600
  EXPECT_DOUBLE_EQ(h["effective_training_ratio"].get<double>(), 0.9);  // 900 of 1000 s
  EXPECT_DOUBLE_EQ(h["mtbf_s"].get<double>(), 1000);
  EXPECT_NEAR(j["optimal_checkpoint_interval_s"].get<double>(), std::sqrt(2 * 40 * 1000.0), 1e-9);
  EXPECT_DOUBLE_EQ(j["expected_loss_per_failure_s"].get<double>(), 1800);
  EXPECT_NE(j["advice"].get<std::string>().find("Young/Daly"), std::string::npos);
  std::string text = render_job(j, false);
  EXPECT_NE(text.find("effective training time 90.0%"), std::string::npos) << text;
  // With the goodput ledger's ETTR on the page, no second percentage contradicts it (the
  // demo showed "goodput run: 37.8%" over "effective training time 35.2%").
  j["history"]["goodput"] = {{"ettr", 0.5}, {"line", "goodput run: 50.0% (hang 50.0%)"}};
  text = render_job(j, false);
  EXPECT_EQ(text.find("effective training time"), std::string::npos) << text;
  EXPECT_NE(text.find("lost to failures 1m40s of 16m40s since the first step"), std::string::npos)
      << text;
}

// The defect: time lost ended at the first step after a restart, so a run resuming from a
// checkpoint 20 steps back counted none of the redone work, and a crash classified at its
// end ("ended") was not a failure at all.
TEST(JobView, LostTimeIncludesTheStepsRedoneSinceTheCheckpoint) {
  testing::TempDir dir;
  Store store(dir.path);
  JobSettings job = llama8b();
  for (int t = 1000; t <= 1500; t += 10) store.add_progress("tr", t, (t - 1000) / 10, 10.0, 2.0);
  store.add_event(1510, "finding", "tr", "critical",
                  "job:tr/ended: task 7 ended: NCCL or network error on node-[1-3]");
  // Resumed at 1600 from the checkpoint at step 30: back at step 50 at 1800.
  for (int t = 1600; t <= 2000; t += 10)
    store.add_progress("tr", t, 30 + (t - 1600) / 10, 10.0, 2.0);
  store.add_event(2001, "finding", "tr", "info", "job:tr/ended: task 9 ended: completed on n");
  auto h = build_job(job, store, 2000)["history"];
  ASSERT_EQ(h["failures"].size(), 1u);
  EXPECT_DOUBLE_EQ(h["failures"][0]["lost_s"].get<double>(), 300);  // 1500 -> back at 50 at 1800
}

// After a hang and a restart, while the new task redoes its steps, the time since the last
// step before the hang is lost (#27: "effective training time 100.0% of 1m2s (lost 0s)"). The
// crash seen while the task ran and its end are one outage, counted once; the last step comes
// from the finding, not from the thinned series.
// Steps 0 and 30 at 1000 and 1060, and task 7's end (a software error) at `at`, its last step
// 40 at 1080 known to the finding only: the series has a row a minute.
void ran_then_ended(Store& store, double at) {
  for (int t = 1000; t <= 1060; t += 60) store.add_progress("tr", t, (t - 1000) / 2, 2.0, 2.0);
  Finding ended = make_finding("job:tr", "tr", "ended", Severity::Critical, "task 7 ended");
  ended.cause = "software error";
  store.add_finding_event(at, ended, std::pair{1080.0, std::int64_t{40}});
}

TEST(JobView, LostTimeCountsWhileTheRunIsNotBackYet) {
  testing::TempDir dir;
  Store store(dir.path);
  JobSettings job = llama8b();
  Finding hung = make_finding("job:tr", "tr", "hung", Severity::Critical, "no step for 25s");
  store.add_finding_event(1105, hung, std::pair{1080.0, std::int64_t{40}});
  ran_then_ended(store, 1110);
  // Restarted from step 25 at 1120: at step 33 when asked, not back at 40 yet.
  store.add_progress("tr", 1120, 25, 2.0, 2.0);
  store.add_progress("tr", 1136, 33, 2.0, 2.0);
  auto h = build_job(job, store, 1140)["history"];
  ASSERT_EQ(h["failures"].size(), 2u);
  EXPECT_DOUBLE_EQ(h["failures"][0]["lost_s"].get<double>(), 60);  // 1080 -> now, 1140
  EXPECT_TRUE(h["failures"][0].value("recovering", false));
  EXPECT_DOUBLE_EQ(h["lost_s"].get<double>(), 60) << "one outage counted twice";
  EXPECT_DOUBLE_EQ(h["effective_training_ratio"].get<double>(), 80.0 / 140);
}

// A restart whose launch failed on a node is one of the run's failures, listed with its node;
// its time is the crash's outage, counted once.
TEST(JobView, ARestartWhoseLaunchFailedIsListedInTheCrashsOutage) {
  testing::TempDir dir;
  Store store(dir.path);
  JobSettings job = llama8b();
  ran_then_ended(store, 1090);
  Finding held = make_finding("job:tr", "tr", "launch-failed", Severity::Critical,
                              "8 could not start: its launch failed on node-2");
  store.add_finding_event(1100, held, std::pair{1080.0, std::int64_t{40}});
  store.add_progress("tr", 1300, 40, 2.0, 2.0);  // back at step 40
  auto h = build_job(job, store, 1400)["history"];
  ASSERT_EQ(h["failures"].size(), 2u);
  EXPECT_NE(h["failures"][1]["reason"].get<std::string>().find("node-2"), std::string::npos);
  EXPECT_DOUBLE_EQ(h["lost_s"].get<double>(), 220) << "one outage: 1080 -> 1300";
}

// A save too quick to time (the demo's: 0.0 s) gave "checkpoint every 0s": no advice then.
TEST(JobView, ASaveTooQuickToTimeGivesNoCheckpointAdvice) {
  testing::TempDir dir;
  Store store(dir.path);
  JobSettings job = llama8b();
  ten_second_steps_then_a_hang(store);
  JobProgress p;
  p.save_seconds = 0.01;
  store.put("progress:tr", p.to_json(), 2000);
  auto j = build_job(job, store, 2000);
  ASSERT_TRUE(j["history"].contains("mtbf_s"));
  EXPECT_FALSE(j.contains("advice")) << j.dump();
  EXPECT_EQ(render_job(j, false).find("checkpoint every"), std::string::npos);
}

// The ETA follows the steps as they come, not the printed step time (#27: 1000 ms printed,
// 2 s between step lines).
TEST(JobView, TheEtaUsesTheObservedIntervalBetweenSteps) {
  JobSettings job;
  JobProgress p;
  p.step = 100;
  p.max_steps = 1100;
  p.step_time = 1.0;
  p.observed_interval = 2.0;
  EXPECT_DOUBLE_EQ(job_figures(job, p, 0)["eta_s"].get<double>(), 2000);
  p.observed_interval = 0;  // nothing observed yet: the printed time
  EXPECT_DOUBLE_EQ(job_figures(job, p, 0)["eta_s"].get<double>(), 1000);
}

TEST(JobView, Sparkline) {
  EXPECT_EQ(sparkline({1, 2, 3, 4, 5, 6, 7, 8}), "▁▂▃▄▅▆▇█");
  EXPECT_EQ(sparkline({5, 5}), "▁▁");
  EXPECT_EQ(sparkline({}), "");
}

}  // namespace
}  // namespace llmwatch
