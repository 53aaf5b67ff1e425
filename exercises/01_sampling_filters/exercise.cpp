// Exercise 01, the learner's file: implement the top-p and min-p filters.
// The statement is in README.md; the contract is documented in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex01_sampling_filters_test
//   ./build-exercises/bin/ex01_sampling_filters_test

#include "exercise.hpp"

namespace inferlab::ex01 {

void top_p_filter(std::span<float> probs, float top_p) {
  // TODO(exercise): keep the smallest set of most probable tokens whose mass reaches top_p of
  //                 the input's total (which need not be 1), zero the others, change nothing
  //                 else. Ties: the lower id counts as more probable. top_p >= 1 keeps all.
  (void)probs;
  (void)top_p;
}

void min_p_filter(std::span<float> probs, float min_p) {
  // TODO(exercise): zero every entry below min_p times the largest probability; an entry
  //                 exactly at the cut is kept. min_p <= 0 keeps everything.
  (void)probs;
  (void)min_p;
}

}  // namespace inferlab::ex01
