// Exercise 06, the learner's file: chapter 03's self-test through the roofline model.
// The statement is in README.md; each function is documented in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex06_decode_self_test_test
//   ./build-exercises/bin/ex06_decode_self_test_test

#include "exercise.hpp"

namespace inferlab::ex06 {

double decode_step_seconds(double params, double bytes_per_param, int batch, const Gpu& gpu) {
  // TODO(exercise): the larger of the compute time and the memory time.
  (void)params;
  (void)bytes_per_param;
  (void)batch;
  (void)gpu;
  return 0.0;
}

double prefill_seconds(double params, double bytes_per_param, int tokens, const Gpu& gpu) {
  // TODO(exercise): the same model: a prefill is a "batch" of prompt tokens.
  (void)params;
  (void)bytes_per_param;
  (void)tokens;
  (void)gpu;
  return 0.0;
}

double decode_speedup(const Gpu& from, const Gpu& to, int batch) {
  // TODO(exercise): a ratio of two step times of Llama-3-8B (kParams, kBf16).
  (void)from;
  (void)to;
  (void)batch;
  return 1.0;
}

double prefill_speedup(const Gpu& from, const Gpu& to, int tokens) {
  // TODO(exercise): likewise for a prefill.
  (void)from;
  (void)to;
  (void)tokens;
  return 1.0;
}

double linear_intensity(int batch, int d, double bytes_per_number) {
  // TODO(exercise): FLOPs divided by bytes moved.
  (void)batch;
  (void)d;
  (void)bytes_per_number;
  return 0.0;
}

double decode_attention_intensity(int batch, int context, int n_heads, int n_kv_heads,
                                  int head_dim, double bytes_per_number) {
  // TODO(exercise): total FLOPs of the batch over total bytes of the batch. What is shared?
  (void)batch;
  (void)context;
  (void)n_heads;
  (void)n_kv_heads;
  (void)head_dim;
  (void)bytes_per_number;
  return 0.0;
}

double tpot(double ttft, double e2e, int output_tokens) {
  // TODO(exercise): the time after the first token, over the gaps between the tokens.
  (void)ttft;
  (void)e2e;
  (void)output_tokens;
  return 0.0;
}

double per_user_tokens_per_second(double tpot_seconds) {
  // TODO(exercise)
  (void)tpot_seconds;
  return 0.0;
}

}  // namespace inferlab::ex06
