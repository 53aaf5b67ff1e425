#pragma once
/// @file exercises/06_decode_self_test/exercise.hpp
/// @brief Exercise 06: chapter 03's self-test, answered with the roofline model instead of a
/// ratio of datasheet numbers. Each step time is max(FLOPs / peak, bytes / bandwidth). Which
/// term wins decides which speed-up a faster GPU gives.

namespace inferlab::ex06 {

/// @brief The two roofs of a GPU.
struct Gpu {
  const char* name;
  double peak_flops;  ///< dense BF16 tensor-core FLOP/s
  double bandwidth;   ///< HBM bytes/s
};
/// NVIDIA A100 SXM 80GB: ~312 dense BF16 TFLOP/s, ~2.0 TB/s.
inline constexpr Gpu kA100{"A100 SXM 80GB", 312e12, 2.0e12};
/// NVIDIA H100 SXM: ~989 dense BF16 TFLOP/s, ~3.35 TB/s.
inline constexpr Gpu kH100{"H100 SXM", 989e12, 3.35e12};

/// Llama-3-8B as the worked example counts it: 8.0e9 parameters in BF16 (2 bytes each).
inline constexpr double kParams = 8.0e9;
inline constexpr double kBf16 = 2.0;

/// @brief Lower bound on one decode step of @p batch sequences: the weights are read once
/// (params x bytes_per_param bytes) and every sequence does 2 FLOPs per parameter. The KV cache
/// is ignored here.
double decode_step_seconds(double params, double bytes_per_param, int batch, const Gpu& gpu);

/// @brief Lower bound on a prefill of @p tokens prompt tokens, in one step: 2 FLOPs per
/// parameter per token, and the weights read once.
double prefill_seconds(double params, double bytes_per_param, int tokens, const Gpu& gpu);

/// @brief Speed-up of a decode step at @p batch when moving from @p from to @p to
/// (time on @p from / time on @p to).
double decode_speedup(const Gpu& from, const Gpu& to, int batch);

/// @brief Speed-up of a @p tokens-token prefill when moving from @p from to @p to.
double prefill_speedup(const Gpu& from, const Gpu& to, int tokens);

/// @brief Arithmetic intensity (FLOP/byte) of a d x d linear layer over @p batch tokens:
/// 2 B d^2 FLOPs; bytes: the weights once, plus B inputs and B outputs of d numbers each.
double linear_intensity(int batch, int d, double bytes_per_number);

/// @brief Arithmetic intensity of decode attention for @p batch sequences, each with @p context
/// cached tokens. A new token does 4 x head_dim FLOPs per query head per cached position (q.k and
/// p.v). Each sequence reads its own K and V: 2 x n_kv_heads x head_dim numbers per position.
double decode_attention_intensity(int batch, int context, int n_heads, int n_kv_heads,
                                  int head_dim, double bytes_per_number);

/// @brief TPOT, the mean time between output tokens of a request of @p output_tokens tokens,
/// from its time to first token and its end-to-end latency (seconds).
double tpot(double ttft, double e2e, int output_tokens);

/// @brief The streaming speed one user sees, tokens per second, given the request's TPOT.
double per_user_tokens_per_second(double tpot_seconds);

}  // namespace inferlab::ex06
