// Exercise 06, the learner's file: chapter 03's roofline, as functions.
// The statement is in README.md; each function is documented in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex06_decode_self_test_test
//   ./build-exercises/bin/ex06_decode_self_test_test

#include "exercise.hpp"

namespace inferlab::ex06 {

double attainable_flops(double intensity, const Gpu& gpu) {
  // TODO(exercise): which roof limits a kernel of this intensity?
  (void)intensity;
  (void)gpu;
  return 0.0;
}

double decode_step_seconds(double params, double bytes_per_param, int batch, const Gpu& gpu) {
  // TODO(exercise): the step cannot be faster than its arithmetic, nor than its memory traffic.
  (void)params;
  (void)bytes_per_param;
  (void)batch;
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

double linear_intensity(int batch, int d, double bytes_per_number) {
  // TODO(exercise): FLOPs over bytes moved; what does the batch share?
  (void)batch;
  (void)d;
  (void)bytes_per_number;
  return 0.0;
}

double decode_attention_intensity(int batch, int context, int n_heads, int n_kv_heads, int head_dim,
                                  double bytes_per_number) {
  // TODO(exercise): FLOPs of the batch over bytes of the batch. What, if anything, is shared?
  (void)batch;
  (void)context;
  (void)n_heads;
  (void)n_kv_heads;
  (void)head_dim;
  (void)bytes_per_number;
  return 0.0;
}

double kv_byte_share(double weight_bytes, int batch, double context, double kv_bytes_per_token) {
  // TODO(exercise): which bytes does the batch share, and which does each sequence bring?
  (void)weight_bytes;
  (void)batch;
  (void)context;
  (void)kv_bytes_per_token;
  return 0.0;
}

}  // namespace inferlab::ex06
