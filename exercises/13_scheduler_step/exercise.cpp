// Exercise 13, the learner's file: one step of continuous batching with chunked prefill.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex13_scheduler_step_test
//   ./build-exercises/bin/ex13_scheduler_step_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex13 {

std::vector<Chunk> plan_step(BatchState& state) {
  // TODO(exercise): refuse limits < 1 with an inferlab::Error.
  // TODO(exercise): the step's chunks, never more than max_batched_tokens tokens in all and
  //                 never more than max_seqs sequences running: decodes first, then prompt
  //                 chunks, then admissions from the front of the queue (exercise.hpp says in
  //                 which order, and README.md why).
  (void)state;
  return {};
}

}  // namespace inferlab::ex13
