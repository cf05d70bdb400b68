#include "rules/training_metrics.h"

#include <gtest/gtest.h>

namespace llmwatch {
namespace {

// The published examples from NVIDIA's recipes.
TEST(TrainingMetrics, TokensPerSecondLlama31_8B) {
  EXPECT_NEAR(tokens_per_second(8192, 128, 12.39), 84631, 1);
}

TEST(TrainingMetrics, MfuLlama31_8B_Fp8On8H100) {
  EXPECT_NEAR(mfu(128, 4.74e14, 12.39, 8, *peak_tflops("H100", "fp8")) * 100, 30.93, 0.01);
}

TEST(TrainingMetrics, Nemotron4_340BFlopsPerSampleFromItsArchitecture) {
  ModelArchitecture a;
  a.layers = 96;
  a.hidden = 18432;
  a.ffn_hidden = 73728;
  a.heads = 96;
  a.query_groups = 8;
  a.vocab = 256000;
  a.seq_length = 4096;
  a.gated_mlp = false;  // squared ReLU
  EXPECT_NEAR(model_flops_per_sample(a) / 1e15, 8.62124, 0.00001);
}

TEST(TrainingMetrics, Llama3_8BFlopsPerSampleMatchTheRecipe) {
  ModelArchitecture a;
  a.layers = 32;
  a.hidden = 4096;
  a.ffn_hidden = 14336;
  a.heads = 32;
  a.query_groups = 8;
  a.vocab = 128256;
  a.seq_length = 8192;
  EXPECT_NEAR(model_flops_per_sample(a) / 1e14, 4.74, 0.01);
}

TEST(TrainingMetrics, TimeToTrainATrillionTokens) {
  EXPECT_NEAR(seconds_to_train_tokens(1e12, 84631) / 86400, 136.76, 0.01);
}

TEST(TrainingMetrics, PeakTable) {
  EXPECT_EQ(*peak_tflops("H100", "bf16"), 989);
  EXPECT_EQ(*peak_tflops("h200", "FP8"), 1979);
  EXPECT_EQ(*peak_tflops("B200", "bf16"), 2250);
  EXPECT_EQ(*peak_tflops("GB300", "fp8"), 4900);
  EXPECT_FALSE(peak_tflops("V100", "bf16"));
  EXPECT_FALSE(peak_tflops("H100", "int4"));
}

TEST(TrainingMetrics, EtaAndYoungDaly) {
  EXPECT_DOUBLE_EQ(eta_seconds(100, 200, 2.0), 200);
  EXPECT_DOUBLE_EQ(eta_seconds(300, 200, 2.0), 0);
  // BLOOM: 40 s saves; with a failure every 8 h the optimum is ~25 min.
  EXPECT_NEAR(optimal_checkpoint_interval(40, 8 * 3600) / 60, 25.3, 0.1);
  EXPECT_DOUBLE_EQ(optimal_checkpoint_interval(0, 100), 0);
}

}  // namespace
}  // namespace llmwatch
