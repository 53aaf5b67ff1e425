#pragma once
/// @file exercises/06_decode_self_test/exercise.hpp
/// @brief Exercise 06: chapter 03's roofline, as functions. A kernel that does F FLOPs and moves
/// M bytes takes at least max(F / peak, M / bandwidth); which term wins depends on its
/// arithmetic intensity F / M, and decides what a faster GPU, a larger batch or a longer
/// context does to it.
///
/// Exercise 03 (chapter 01) assumed each phase is limited by one resource: decode by bandwidth,
/// prefill by FLOP/s. Here the roofline decides, at every batch size, and the step's bytes
/// include what batching cannot share: each sequence's KV cache.

namespace inferlab::ex06 {

/// @brief The two roofs of a GPU.
struct Gpu {
  const char* name;   ///< for messages
  double peak_flops;  ///< dense BF16 tensor-core FLOP/s
  double bandwidth;   ///< HBM bytes/s
};
/// NVIDIA A100 SXM 80GB: ~312 dense BF16 TFLOP/s, ~2.0 TB/s.
inline constexpr Gpu kA100{"A100 SXM 80GB", 312e12, 2.0e12};
/// NVIDIA H100 SXM: ~989 dense BF16 TFLOP/s, ~3.35 TB/s.
inline constexpr Gpu kH100{"H100 SXM", 989e12, 3.35e12};

/// Llama-3-8B as the worked example counts it: 8.0e9 parameters in BF16 (2 bytes each).
inline constexpr double kParams = 8.0e9;
/// Bytes per BF16 number.
inline constexpr double kBf16 = 2.0;

/// @brief The roofline: the FLOP/s a kernel of arithmetic intensity @p intensity (FLOP/byte)
/// can reach on @p gpu at best.
double attainable_flops(double intensity, const Gpu& gpu);

/// @brief Lower bound on one decode step of @p batch sequences, seconds: the weights are read
/// once for the whole batch (params x bytes_per_param bytes) and every sequence does 2 FLOPs
/// per parameter. The KV cache is left out here (kv_byte_share() measures what that omits). A
/// prefill of T tokens is the same step with batch = T.
double decode_step_seconds(double params, double bytes_per_param, int batch, const Gpu& gpu);

/// @brief Speed-up of a Llama-3-8B decode step (kParams, kBf16) at @p batch when moving from
/// @p from to @p to: time on @p from / time on @p to.
double decode_speedup(const Gpu& from, const Gpu& to, int batch);

/// @brief Arithmetic intensity (FLOP/byte) of a d x d linear layer over @p batch tokens:
/// 2 B d^2 FLOPs; bytes: the weights once, plus B inputs and B outputs of d numbers each.
double linear_intensity(int batch, int d, double bytes_per_number);

/// @brief Arithmetic intensity of decode attention for @p batch sequences, each with @p context
/// cached tokens. A new token does 4 x head_dim FLOPs per query head per cached position (q.k and
/// p.v). Each sequence reads its own K and V: 2 x n_kv_heads x head_dim numbers per position
/// (the query and the output, one token's worth, are left out).
double decode_attention_intensity(int batch, int context, int n_heads, int n_kv_heads, int head_dim,
                                  double bytes_per_number);

/// @brief The share of a decode step's bytes that is KV cache: @p batch sequences each read
/// @p context cached positions of @p kv_bytes_per_token bytes, and the step reads
/// @p weight_bytes of weights once. KV / (weights + KV), in [0, 1).
double kv_byte_share(double weight_bytes, int batch, double context, double kv_bytes_per_token);

}  // namespace inferlab::ex06
