#pragma once
/// @file rope.hpp
/// @brief Rotary position embedding, llama2.c convention: adjacent pairs (2i, 2i+1) of each
/// head are rotated by angle pos * theta^(-2i/hs).

namespace inferlab::kernels {

/// @brief Reference. q (T, Nh*hs) and k (T, Nkv*hs) rotated in place; pos (T) positions.
void rope_ref(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
              float theta);
/// @brief Fast CPU version (OpenMP over tokens, frequencies computed once per call).
void rope_cpu(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
              float theta);
/// @brief Fast CPU version with the frequencies given: pair j of every head rotates by
/// pos * inv_freq[j], inv_freq holding hs/2 values. RoPE scaling rules (linear, Llama 3's)
/// change only these; the table theta^(-2j/hs) gives exactly rope_cpu(..., theta)'s bits.
void rope_cpu(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
              const float* inv_freq);

}  // namespace inferlab::kernels
