// Exercise 09, the learner's file: the verification step of tree speculation.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex09_tree_speculation_test
//   ./build-exercises/bin/ex09_tree_speculation_test

#include "exercise.hpp"

namespace inferlab::ex09 {

TreeVerdict verify_tree(const DraftTree& tree, std::span<const float> p, Rng& rng) {
  // TODO(exercise): the rule of README.md (recursive rejection over siblings): the accepted
  //                 path from the context down and the next token after it.
  (void)tree;
  (void)p;
  (void)rng;
  return {};
}

}  // namespace inferlab::ex09
