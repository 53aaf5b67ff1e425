#pragma once
/// @file exercises/12_kv_cache_attention/exercise.hpp
/// @brief Exercise 12: one layer of a sequence's KV cache. A decode step appends the new token's
/// key and value, then the token's query attends to every cached position (grouped-query
/// attention: Nh query heads share Nkv KV heads).
///
/// Shapes: hs floats per head; a key or value row holds the Nkv heads side by side
/// (Nkv * hs floats); a query holds the Nh heads side by side (Nh * hs floats). Query head h
/// reads KV head h / g, with g = Nh / Nkv (consecutive groups, as in the core's kernels and in
/// Llama's repeat_kv).

#include <span>
#include <vector>

namespace inferlab::ex12 {

/// @brief One layer's keys and values of one sequence, in float32.
struct LayerCache {
  int n_kv_heads = 0;         ///< Nkv: heads stored per position
  int head_size = 0;          ///< hs: floats per head
  int capacity = 0;           ///< S: positions the cache has room for
  int length = 0;             ///< positions 0..length-1 hold a key and a value
  std::vector<float> keys;    ///< (S, Nkv * hs): row p holds position p
  std::vector<float> values;  ///< (S, Nkv * hs): row p holds position p
};

/// @brief An empty cache (length 0) with room for @p capacity positions of @p n_kv_heads heads
/// of @p head_size floats, keys and values allocated for the whole capacity.
/// @throws inferlab::Error if any argument is < 1.
LayerCache make_layer_cache(int capacity, int n_kv_heads, int head_size);

/// @brief Appends one position: @p k and @p v become row `length` of the keys and values, and
/// `length` grows by one.
/// @param cache the layer's cache; modified
/// @param k (Nkv * hs) the new token's key (RoPE already applied)
/// @param v (Nkv * hs) the new token's value
/// @throws inferlab::Error if the cache is full (the message names its capacity) or @p k or
/// @p v does not hold Nkv * hs floats. The cache is unchanged then.
void append(LayerCache& cache, std::span<const float> k, std::span<const float> v);

/// @brief Attention of one query over every cached position 0..length-1. For each query head h,
/// with j = h / (Nh / Nkv) the KV head it reads:
///
///     s_p   = (q_h . k_{p,j}) / sqrt(hs)                          for p in [0, length)
///     w_p   = exp(s_p) / sum_r exp(s_r)                             (softmax over positions)
///     out_h = sum_p w_p v_{p,j}
///
/// It must give finite results for any finite scores, however large (a softmax computed naively
/// overflows float for scores above about 88).
/// @param cache the layer's cache, length >= 1 (the query's own position is the last one)
/// @param q (Nh * hs) the query (RoPE applied)
/// @param n_heads Nh, a positive multiple of Nkv
/// @return (Nh * hs) the attention output, heads side by side
/// @throws inferlab::Error if the cache is empty, @p n_heads is not a positive multiple of
/// Nkv, or @p q does not hold Nh * hs floats.
/// @note 4 Nh hs length FLOPs; reads 2 Nkv hs length cached floats: g query heads share every
/// byte read, which is why grouped-query attention makes decode faster, not only smaller.
std::vector<float> attend(const LayerCache& cache, std::span<const float> q, int n_heads);

}  // namespace inferlab::ex12
