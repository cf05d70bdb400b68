#include "rules/training_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "finding_kinds.h"

namespace llmwatch {
namespace {

using testing::kinds;

struct Series {
  JobProgress p;
  TrainingLogParser parser;
  int step = 0;
  double t = 0;
  void add(double step_time, double loss, double samples_delta = 128) {
    ++step;
    t += step_time;
    double samples = p.consumed_samples.value_or(0) + samples_delta;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "Training epoch 0, iteration %d/999 | global_batch_size: 128 | global_step: %d | "
                  "reduced_train_loss: %g | train_step_timing in s: %.3f | consumed_samples: %.0f",
                  step, step, loss, step_time, samples);
    apply_lines(p, {buf}, parser, t);
  }
  std::vector<std::string> found() { return kinds(evaluate_training(JobSettings{}, "tr", p)); }
};

TEST(TrainingRules, NoisyButHealthySeriesProducesNothing) {
  Series s;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> noise(-0.08, 0.08);
  for (int i = 0; i < 200; ++i)
    s.add(12.4 * (1 + noise(rng)), 2.0 + 8.0 / (1 + i / 10.0) + noise(rng) * 0.5);
  EXPECT_TRUE(s.found().empty());
}

TEST(TrainingRules, StepTimeJumpIsASlowdownAfterNSteps) {
  Series s;
  for (int i = 0; i < 30; ++i) s.add(12.4, 2.0);
  for (int i = 0; i < 4; ++i) s.add(15.5, 2.0);  // +25%, but only 4 of the 5 steps needed
  EXPECT_TRUE(s.found().empty());
  s.add(15.5, 2.0);
  auto fs = evaluate_training(JobSettings{}, "tr", s.p);
  ASSERT_EQ(kinds(fs), std::vector<std::string>{"slowdown"});
  EXPECT_NE(fs[0].summary.find("25% above this run's median 12.4 s"), std::string::npos)
      << fs[0].summary;
  s.add(12.4, 2.0);  // back to normal
  EXPECT_TRUE(s.found().empty());
}

TEST(TrainingRules, StepsThatIncludeACheckpointSaveAreNotSlow) {
  Series s;
  for (int i = 0; i < 30; ++i) s.add(12.4, 2.0);
  for (int i = 0; i < 6; ++i) {
    apply_lines(s.p, {"Global Checkpoint Save : Rank: 0 : Save duration: 4.389s"}, s.parser, s.t);
    s.add(17.0, 2.0);
  }
  EXPECT_TRUE(s.found().empty());
  EXPECT_DOUBLE_EQ(*s.p.save_seconds, 4.389);
}

TEST(TrainingRules, LossSpikeNanAndCounters) {
  Series s;
  for (int i = 0; i < 20; ++i) s.add(1.0, 2.0);
  s.add(1.0, 3.5);
  EXPECT_EQ(s.found(), std::vector<std::string>{"loss-spike"});
  s.add(1.0, NAN);
  auto found = s.found();
  EXPECT_NE(std::find(found.begin(), found.end(), "nan-loss"), found.end());

  JobProgress m;
  TrainingLogParser parser;
  auto megatron = [&](int it, int skipped, double t) {
    apply_lines(m,
                {" iteration " + std::to_string(it) +
                 "/ 1000 | consumed samples: " + std::to_string(it * 512) +
                 " | elapsed time per iteration (ms): 1000.0 | lm loss: 2.0E+00 | number of "
                 "skipped iterations: " +
                 std::to_string(skipped) + " | number of nan iterations: 0 |"},
                parser, t);
  };
  megatron(1, 0, 1);
  megatron(2, 0, 2);
  EXPECT_TRUE(kinds(evaluate_training(JobSettings{}, "m", m)).empty());
  megatron(3, 2, 3);
  EXPECT_EQ(kinds(evaluate_training(JobSettings{}, "m", m)),
            std::vector<std::string>{"bad-iterations"});
  megatron(4, 2, 4);  // no longer rising
  EXPECT_TRUE(kinds(evaluate_training(JobSettings{}, "m", m)).empty());
}

TEST(TrainingRules, ConsumedSamplesStalledWhileStepsAdvance) {
  Series s;
  for (int i = 0; i < 5; ++i) s.add(1.0, 2.0);
  for (int i = 0; i < 2; ++i) s.add(1.0, 2.0, 0);
  EXPECT_TRUE(s.found().empty());
  s.add(1.0, 2.0, 0);
  EXPECT_EQ(s.found(), std::vector<std::string>{"samples-stalled"});
}

}  // namespace
}  // namespace llmwatch
