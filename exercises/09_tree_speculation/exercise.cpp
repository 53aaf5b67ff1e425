// Exercise 09, the learner's file: the verification step of tree speculation.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex09_tree_speculation_test
//   ./build-exercises/bin/ex09_tree_speculation_test

#include "exercise.hpp"

namespace inferlab::ex09 {

TreeVerdict verify_tree(const DraftTree& tree, std::span<const float> p, Rng& rng) {
  // TODO(exercise): V = p.size() / (tree.size() + 1). List each point's children in node order
  //                 (the context is point -1).
  // TODO(exercise): from the context, with r = p's row at the current point: try each child c
  //                 (accept if rng.next_f32() * q_c(x) < r(x)); on rejection r = norm(max(0,
  //                 r - q_c)). Accepted: push c on the path and continue from c. None accepted:
  //                 next_token = sample_from(r, rng.next_f32()).
  (void)tree;
  (void)p;
  (void)rng;
  return {};
}

}  // namespace inferlab::ex09
