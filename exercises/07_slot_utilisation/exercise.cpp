// Exercise 07, the learner's file: per-step slot utilisation of static and continuous batching.
// The statement is in README.md; the definitions are in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex07_slot_utilisation_test
//   ./build-exercises/bin/ex07_slot_utilisation_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex07 {

std::vector<SlotStep> simulate_slots(std::span<const int> output_lengths, int slots,
                                     Batching policy) {
  // TODO(exercise): throw inferlab::Error if slots < 1 or any length is < 1.
  // TODO(exercise): one SlotStep per step until every request has finished, following the
  //                 model of exercise.hpp: who may take a free slot, and when, is the only
  //                 difference between the two policies.
  (void)output_lengths;
  (void)slots;
  (void)policy;
  return {};
}

double mean_utilisation(std::span<const SlotStep> steps, bool only_while_waiting) {
  // TODO(exercise): the mean of utilisation over the steps (only those with waiting > 0 when
  //                 only_while_waiting); 0 when no step counts.
  (void)steps;
  (void)only_while_waiting;
  return 0.0;
}

}  // namespace inferlab::ex07
