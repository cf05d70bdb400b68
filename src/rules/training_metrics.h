#pragma once
// The numbers the field quotes for a training run (NVIDIA's recipes use exactly these):
// tokens/s, MFU, model FLOPs from the architecture, time to train N tokens, ETA, and the
// checkpoint interval that minimises lost time. Pure functions.
#include <optional>
#include <string>

namespace llmwatch {

// Dense peak TFLOPS per GPU for a precision ("bf16" or "fp8"); nullopt for an unknown GPU.
// H100 989/1979, H200 = H100, B200 2250/4500, GB200 and GB300 2450/4900.
std::optional<double> peak_tflops(const std::string& gpu, const std::string& precision);

double tokens_per_second(double seq_length, double global_batch_size, double step_seconds);

// Model FLOPs utilisation, 0..1.
double mfu(double global_batch_size, double model_flops_per_sample, double step_seconds,
           double gpus, double peak_tflops_per_gpu);

struct ModelArchitecture {
  double layers = 0, hidden = 0, ffn_hidden = 0, heads = 0, query_groups = 0, vocab = 0,
         seq_length = 0;
  bool gated_mlp =
      true;  // SwiGLU (Llama, Mixtral): 3 MLP matmuls; false: 2 (GPT, Nemotron's squared ReLU)
};

// FLOPs per sample (forward + backward) with the formula of NeMo's flops callback:
// seq·L·h²·(12 + 12·g/a + m·f/h + 12·s/h + 6·V/(L·h)), m = 18 gated, 12 plain.
double model_flops_per_sample(const ModelArchitecture& arch);

double seconds_to_train_tokens(double tokens, double tokens_per_second);
double eta_seconds(long long step, long long max_steps, double step_seconds);

// Young/Daly: the checkpoint interval that minimises expected lost time, √(2·save·MTBF).
double optimal_checkpoint_interval(double save_seconds, double mtbf_seconds);

}  // namespace llmwatch
