// Exercise 04, the learner's file: the KV-cache calculator.
// The statement is in README.md; each function is documented in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex04_kv_calculator_test
//   ./build-exercises/bin/ex04_kv_calculator_test

#include "exercise.hpp"

namespace inferlab::ex04 {

double kv_bytes_per_token(const KvModel& model, double bytes_per_value) {
  // TODO(exercise): one key and one value vector of head_dim numbers, per layer, per KV head.
  (void)model;
  (void)bytes_per_value;
  return 0.0;
}

double kv_bytes_per_sequence(const KvModel& model, double bytes_per_value, long long tokens) {
  // TODO(exercise): every token of the sequence adds the same amount.
  (void)model;
  (void)bytes_per_value;
  (void)tokens;
  return 0.0;
}

long long max_concurrent_sequences(const KvModel& model, double bytes_per_weight,
                                   double kv_bytes_per_value, long long context, int gpus,
                                   double bytes_per_gpu) {
  // TODO(exercise): the largest whole number of full-context caches that fit beside the
  //                 weights; 0 when the weights alone do not fit.
  (void)model;
  (void)bytes_per_weight;
  (void)kv_bytes_per_value;
  (void)context;
  (void)gpus;
  (void)bytes_per_gpu;
  return 0;
}

}  // namespace inferlab::ex04
