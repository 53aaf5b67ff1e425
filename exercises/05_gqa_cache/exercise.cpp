// Exercise 05, the learner's file: turn this multi-head KV cache into a grouped-query one.
// As given, it stores a key and a value for every QUERY head (what a multi-head model needs),
// and maps query head h to stored head h. Make it store only the KV heads and share each one
// among its group of query heads. The statement is in README.md.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex05_gqa_cache_test
//   ./build-exercises/bin/ex05_gqa_cache_test

#include <cstring>

#include "exercise.hpp"

namespace inferlab::ex05 {

int kv_head_for(int query_head, int n_heads, int n_kv_heads) {
  // TODO(exercise): consecutive groups of g = n_heads / n_kv_heads query heads share a KV head.
  (void)n_heads;
  (void)n_kv_heads;
  return query_head;
}

double cache_bytes(int layers, int stored_heads, int head_dim, long long tokens,
                   double bytes_per_value) {
  // TODO(exercise): keys and values, for every layer, stored head and token.
  (void)layers;
  (void)stored_heads;
  (void)head_dim;
  (void)tokens;
  (void)bytes_per_value;
  return 0.0;
}

double gqa_saving(int n_heads, int n_kv_heads) {
  // TODO(exercise): the ratio of two cache sizes; most factors cancel.
  (void)n_heads;
  (void)n_kv_heads;
  return 1.0;
}

GqaCache::GqaCache(int layers, int n_heads, int n_kv_heads, int head_dim, int max_tokens)
    : layers_(layers),
      n_heads_(n_heads),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      max_tokens_(max_tokens),
      keys_(std::size_t(layers) * max_tokens * stored_heads() * head_dim),
      values_(keys_.size()) {}

// TODO(exercise): a GQA cache stores n_kv_heads_ heads, not n_heads_.
int GqaCache::stored_heads() const { return n_heads_; }

void GqaCache::write(int layer, int pos, const float* k, const float* v) {
  const std::size_t row = std::size_t(stored_heads()) * head_dim_;
  const std::size_t at = (std::size_t(layer) * max_tokens_ + pos) * row;
  // TODO(exercise): k and v hold n_kv_heads_ heads; copy exactly one row of the cache.
  std::memcpy(&keys_[at], k, std::size_t(n_kv_heads_) * head_dim_ * sizeof(float));
  std::memcpy(&values_[at], v, std::size_t(n_kv_heads_) * head_dim_ * sizeof(float));
}

const float* GqaCache::key(int layer, int pos, int query_head) const {
  const std::size_t row = std::size_t(stored_heads()) * head_dim_;
  const int head = kv_head_for(query_head, n_heads_, n_kv_heads_);
  return &keys_[(std::size_t(layer) * max_tokens_ + pos) * row + std::size_t(head) * head_dim_];
}

const float* GqaCache::value(int layer, int pos, int query_head) const {
  const std::size_t row = std::size_t(stored_heads()) * head_dim_;
  const int head = kv_head_for(query_head, n_heads_, n_kv_heads_);
  return &values_[(std::size_t(layer) * max_tokens_ + pos) * row + std::size_t(head) * head_dim_];
}

const float* GqaCache::layer_keys(int layer) const {
  return &keys_[std::size_t(layer) * max_tokens_ * stored_heads() * head_dim_];
}

const float* GqaCache::layer_values(int layer) const {
  return &values_[std::size_t(layer) * max_tokens_ * stored_heads() * head_dim_];
}

std::size_t GqaCache::bytes() const { return (keys_.size() + values_.size()) * sizeof(float); }

}  // namespace inferlab::ex05
