// Exercise 11, the learner's file: a prefix cache as a radix tree, with LRU eviction of leaves.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex11_prefix_cache_test
//   ./build-exercises/bin/ex11_prefix_cache_test

#include "exercise.hpp"

#include "inferlab/error.hpp"

namespace inferlab::ex11 {

PrefixCache make_prefix_cache(std::size_t max_entries) {
  // TODO(exercise): refuse max_entries == 0 with an inferlab::Error.
  PrefixCache cache;
  cache.max_entries = max_entries;
  cache.nodes.emplace_back();  // the root: the empty sequence, never an entry
  return cache;
}

std::size_t match(PrefixCache& cache, std::span<const int> tokens) {
  // TODO(exercise): advance the clock; from the root, follow the child whose edge starts with
  //                 the next token, count how many of its edge's tokens agree, and go on only
  //                 if the whole edge agreed. Every node entered is used: refresh its last_used
  //                 (and its place in cache.leaves if it is a leaf).
  (void)cache;
  (void)tokens;
  return 0;
}

void insert(PrefixCache& cache, std::span<const int> tokens) {
  // TODO(exercise): walk down as match() does, refreshing the path. Where the tokens leave an
  //                 edge in the middle (or end there), split it: a new node takes the agreeing
  //                 part and becomes the old node's parent. Where no child starts with the next
  //                 token, the rest of the tokens become one new leaf. Keep cache.entries and
  //                 cache.leaves in step, then call evict().
  (void)cache;
  (void)tokens;
}

void evict(PrefixCache& cache) {
  // TODO(exercise): while there are too many entries, remove the oldest leaf: unlink it from
  //                 its parent, free its slot, and if the parent is now a childless entry, it
  //                 joins cache.leaves.
  (void)cache;
}

}  // namespace inferlab::ex11
