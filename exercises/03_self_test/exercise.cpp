// Exercise 03, the learner's file: answer chapter 01's self-test as functions.
// The statement is in README.md; each function is documented in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex03_self_test_test
//   ./build-exercises/bin/ex03_self_test_test

#include "exercise.hpp"

namespace inferlab::ex03 {

double ridge_point(const Gpu& gpu) {
  // TODO(exercise): how many FLOPs per byte read keep the arithmetic units busy?
  (void)gpu;
  return 0.0;
}

double decode_speedup(const Gpu& from, const Gpu& to) {
  // TODO(exercise): which of the two numbers limits a memory-bound step? Take its ratio.
  (void)from;
  (void)to;
  return 0.0;
}

double prefill_speedup(const Gpu& from, const Gpu& to) {
  // TODO(exercise): and which one limits a compute-bound step?
  (void)from;
  (void)to;
  return 0.0;
}

double min_p_threshold(double min_p, double p_max) {
  // TODO(exercise): the cut scales with the most probable token's probability.
  (void)min_p;
  (void)p_max;
  return 0.0;
}

double decode_seconds_per_token(double n_params, double bytes_per_param, const Gpu& gpu) {
  // TODO(exercise): what must a batch-1 step read, and which resource limits it?
  (void)n_params;
  (void)bytes_per_param;
  (void)gpu;
  return 0.0;
}

double critical_batch_size(double n_params, double bytes_per_param, const Gpu& gpu) {
  // TODO(exercise): the batch at which the step's arithmetic takes as long as its weight
  //                 reads. Simplify the result: what does it reduce to for BF16?
  (void)n_params;
  (void)bytes_per_param;
  (void)gpu;
  return 0.0;
}

double prefill_seconds(double n_params, double prompt_tokens, const Gpu& gpu) {
  // TODO(exercise): a prefill is compute-bound: how many FLOPs, at what rate?
  (void)n_params;
  (void)prompt_tokens;
  (void)gpu;
  return 0.0;
}

double streaming_tokens_per_second(double tpot) {
  // TODO(exercise): one token every TPOT seconds.
  (void)tpot;
  return 0.0;
}

}  // namespace inferlab::ex03
