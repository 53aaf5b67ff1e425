// Exercise 01, the learner's file: implement the top-p and min-p filters.
// The statement is in README.md; the contract is documented in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex01_sampling_filters_test
//   ./build-exercises/bin/ex01_sampling_filters_test

#include "exercise.hpp"

namespace inferlab::ex01 {

void top_p_filter(std::span<float> probs, float top_p) {
  // TODO(exercise): return early when there is nothing to cut (top_p >= 1, or an empty span).
  // TODO(exercise): compute the total mass, so the input need not sum to 1.
  // TODO(exercise): order the token ids by decreasing probability (std::vector<int> +
  //                 std::iota + std::stable_sort keeps lower ids first on ties).
  // TODO(exercise): walk that order summing the mass; keep a token while the mass before it is
  //                 below top_p * total, zero every token after that.
  (void)probs;
  (void)top_p;
}

void min_p_filter(std::span<float> probs, float min_p) {
  // TODO(exercise): return early when min_p <= 0 or the span is empty.
  // TODO(exercise): find the largest probability p_max (std::max_element).
  // TODO(exercise): zero every entry below min_p * p_max; keep the ones exactly at it.
  (void)probs;
  (void)min_p;
}

}  // namespace inferlab::ex01
