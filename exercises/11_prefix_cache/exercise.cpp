// Exercise 11, the learner's file: a prefix cache as a radix tree, with LRU eviction of leaves.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex11_prefix_cache_test
//   ./build-exercises/bin/ex11_prefix_cache_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex11 {

PrefixCache make_prefix_cache(std::size_t max_entries) {
  // TODO(exercise): refuse max_entries == 0 with an inferlab::Error.
  PrefixCache cache;
  cache.max_entries = max_entries;
  cache.nodes.emplace_back();  // the root: the empty sequence, never an entry
  return cache;
}

std::size_t match(PrefixCache& cache, std::span<const int> tokens) {
  // TODO(exercise): the length of the longest cached prefix of tokens; the call is one use
  //                 (the clock advances) and stamps every node it went through, including one
  //                 whose edge it stopped inside. It creates nothing.
  (void)cache;
  (void)tokens;
  return 0;
}

void insert(PrefixCache& cache, std::span<const int> tokens) {
  // TODO(exercise): afterwards the tree spells tokens and a node ends where they end; at most
  //                 two nodes are created (a split, a leaf), the path is stamped as one use,
  //                 cache.entries and cache.leaves are in step, and the bound holds (evict).
  (void)cache;
  (void)tokens;
}

void evict(PrefixCache& cache) {
  // TODO(exercise): least recently used leaves go, one at a time, until the bound holds; a
  //                 parent left without children is a leaf from then on.
  (void)cache;
}

}  // namespace inferlab::ex11
