// Exercise 05, the checked answer: a grouped-query-attention KV cache.

#include <cstring>

#include "exercise.hpp"

namespace inferlab::ex05 {

int kv_head_for(int query_head, int n_heads, int n_kv_heads) {
  // Consecutive groups, as Llama's repeat_kv and InferLab's attention kernels lay them out.
  return query_head / (n_heads / n_kv_heads);
}

double cache_bytes(int layers, int stored_heads, int head_dim, long long tokens,
                   double bytes_per_value) {
  return 2.0 * layers * stored_heads * head_dim * double(tokens) * bytes_per_value;
}

double gqa_saving(int n_heads, int n_kv_heads) {
  // Layers, head size, tokens and bytes per value cancel: only the stored heads differ.
  return double(n_heads) / double(n_kv_heads);
}

GqaCache::GqaCache(int layers, int n_heads, int n_kv_heads, int head_dim, int max_tokens)
    : layers_(layers),
      n_heads_(n_heads),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      max_tokens_(max_tokens),
      keys_(std::size_t(layers) * max_tokens * stored_heads() * head_dim),
      values_(keys_.size()) {}

int GqaCache::stored_heads() const { return n_kv_heads_; }

void GqaCache::write(int layer, int pos, const float* k, const float* v) {
  const std::size_t row = std::size_t(stored_heads()) * head_dim_;
  const std::size_t at = (std::size_t(layer) * max_tokens_ + pos) * row;
  std::memcpy(&keys_[at], k, row * sizeof(float));
  std::memcpy(&values_[at], v, row * sizeof(float));
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
