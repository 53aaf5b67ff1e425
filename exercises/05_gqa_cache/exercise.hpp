#pragma once
/// @file exercises/05_gqa_cache/exercise.hpp
/// @brief Exercise 05: a grouped-query-attention (GQA) KV cache. With GQA, Nh query heads share
/// Nkv KV heads in groups of g = Nh / Nkv. The cache stores Nkv heads, and query head h reads KV
/// head h / g. Llama-3-70B has 64 query heads and 8 KV heads, so its cache is 8x smaller than a
/// multi-head cache would be.

#include <cstddef>
#include <vector>

namespace inferlab::ex05 {

/// @brief The KV head that query head @p query_head reads (heads grouped consecutively:
/// query heads 0..g-1 read KV head 0, g..2g-1 read KV head 1, ...).
int kv_head_for(int query_head, int n_heads, int n_kv_heads);

/// @brief Bytes of a KV cache for @p tokens tokens that stores @p stored_heads heads per layer.
double cache_bytes(int layers, int stored_heads, int head_dim, long long tokens,
                   double bytes_per_value);

/// @brief Memory saved by GQA: (bytes of a cache storing all Nh heads) / (bytes storing Nkv).
double gqa_saving(int n_heads, int n_kv_heads);

/// @brief A float32 KV cache for one sequence that stores only the KV heads.
///
/// Layout: keys and values each (layers, max_tokens, stored_heads * head_dim). Row p of layer
/// l holds position p, with its heads side by side. This is the layout that
/// inferlab::kernels::attention_* expect for one layer: (S, Nkv * hs).
class GqaCache {
 public:
  GqaCache(int layers, int n_heads, int n_kv_heads, int head_dim, int max_tokens);

  /// @brief Stores the keys and values of position @p pos in layer @p layer.
  /// @param k, v  (n_kv_heads * head_dim): the K and V projections of one token.
  void write(int layer, int pos, const float* k, const float* v);
  /// @brief The key that query head @p query_head attends with at position @p pos
  /// (head_dim floats).
  const float* key(int layer, int pos, int query_head) const;
  /// @brief The value, in the same way.
  const float* value(int layer, int pos, int query_head) const;
  /// @brief Layer @p layer's keys, (max_tokens, stored_heads * head_dim).
  const float* layer_keys(int layer) const;
  const float* layer_values(int layer) const;
  /// @brief KV heads stored per position and layer (Nkv for a GQA cache).
  int stored_heads() const;
  /// @brief Bytes the cache allocates (keys and values).
  std::size_t bytes() const;

 private:
  int layers_, n_heads_, n_kv_heads_, head_dim_, max_tokens_;
  std::vector<float> keys_, values_;
};

}  // namespace inferlab::ex05
