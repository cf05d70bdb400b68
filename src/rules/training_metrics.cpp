#include "rules/training_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace llmwatch {

std::optional<double> peak_tflops(const std::string& gpu_name, const std::string& precision_name) {
  std::string gpu = gpu_name, precision = precision_name;
  for (auto& c : gpu) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto& c : precision) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool fp8 = precision == "fp8";
  if (!fp8 && precision != "bf16" && precision != "fp16") return std::nullopt;
  if (gpu.rfind("H100", 0) == 0 || gpu.rfind("H200", 0) == 0) return fp8 ? 1979 : 989;
  if (gpu.rfind("B200", 0) == 0) return fp8 ? 4500 : 2250;
  if (gpu.rfind("GB200", 0) == 0 || gpu.rfind("GB300", 0) == 0) return fp8 ? 4900 : 2450;
  return std::nullopt;
}

double tokens_per_second(double seq_length, double global_batch_size, double step_seconds) {
  return step_seconds > 0 ? seq_length * global_batch_size / step_seconds : 0;
}

double mfu(double global_batch_size, double model_flops_per_sample, double step_seconds,
           double gpus, double peak_tflops_per_gpu) {
  if (step_seconds <= 0 || gpus <= 0 || peak_tflops_per_gpu <= 0) return 0;
  return global_batch_size * model_flops_per_sample / step_seconds / gpus /
         (peak_tflops_per_gpu * 1e12);
}

double model_flops_per_sample(const ModelArchitecture& a) {
  if (a.layers <= 0 || a.hidden <= 0 || a.heads <= 0) return 0;
  double mlp = a.gated_mlp ? 18 : 12;
  return a.seq_length * a.layers * a.hidden * a.hidden *
         (12 + 12 * a.query_groups / a.heads + mlp * a.ffn_hidden / a.hidden +
          12 * a.seq_length / a.hidden + 6 * a.vocab / (a.layers * a.hidden));
}

double seconds_to_train_tokens(double tokens, double tps) {
  return tps > 0 ? tokens / tps : 0;
}

double eta_seconds(long long step, long long max_steps, double step_seconds) {
  return step_seconds > 0 && max_steps > step ? static_cast<double>(max_steps - step) * step_seconds
                                              : 0;
}

double optimal_checkpoint_interval(double save_seconds, double mtbf_seconds) {
  return save_seconds > 0 && mtbf_seconds > 0 ? std::sqrt(2 * save_seconds * mtbf_seconds) : 0;
}

}  // namespace llmwatch
