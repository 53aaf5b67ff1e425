// Exercise 12, the learner's file: one layer of the KV cache, the append of a decode step and
// the attention read of its query.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex12_kv_cache_attention_test
//   ./build-exercises/bin/ex12_kv_cache_attention_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex12 {

LayerCache make_layer_cache(int capacity, int n_kv_heads, int head_size) {
  // TODO(exercise): refuse sizes < 1; an empty cache with room for the whole capacity.
  (void)capacity;
  (void)n_kv_heads;
  (void)head_size;
  return {};
}

void append(LayerCache& cache, std::span<const float> k, std::span<const float> v) {
  // TODO(exercise): the new position is the next row; a full cache or a row of the wrong size
  //                 is an inferlab::Error and leaves the cache as it was.
  (void)cache;
  (void)k;
  (void)v;
}

std::vector<float> attend(const LayerCache& cache, std::span<const float> q, int n_heads) {
  // TODO(exercise): every query head attends to every cached position through the KV head of
  //                 its group (exercise.hpp); finite for large scores; inferlab::Error on an
  //                 empty cache or inconsistent sizes.
  (void)cache;
  (void)n_heads;
  return std::vector<float>(q.size(), 0.0f);
}

}  // namespace inferlab::ex12
