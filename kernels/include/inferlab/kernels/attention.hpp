#pragma once
/// @file attention.hpp
/// @brief Causal grouped-query attention of T new tokens over one sequence's KV cache.
///
/// Token t sits at position pos[t] and attends to cache positions 0..pos[t] (inclusive; its own
/// key and value are already written). Query head h reads KV head h / (Nh / Nkv).

namespace inferlab::kernels {

/// @brief Reference.
/// @param out (T, Nh*hs) attention output
/// @param q (T, Nh*hs) queries (RoPE applied)
/// @param k_cache (S, Nkv*hs) keys of this layer, row p = position p
/// @param v_cache (S, Nkv*hs) values of this layer
/// @param pos (T) position of each query token
/// @param T number of query tokens in this call
/// @param n_heads Nh, query heads
/// @param n_kv_heads Nkv, key/value heads (divides Nh; Nh / Nkv query heads share one)
/// @param head_size hs, floats per head
/// @note Cost per token: 4*(pos+1)*Nh*hs FLOPs; reads (pos+1)*2*Nkv*hs cached floats.
void attention_ref(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size);
/// @brief Fast CPU version (OpenMP over (token, head) pairs).
void attention_cpu(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size);

}  // namespace inferlab::kernels
