#pragma once
/// @file exercises/03_self_test/exercise.hpp
/// @brief Exercise 03: chapter 01's self-test and worked example, answered as functions.
///
/// Every answer is a back-of-the-envelope estimate from two hardware numbers, peak dense BF16
/// FLOP/s and HBM bandwidth, and the size of the model. The hardware figures below are the
/// approximate public NVIDIA specifications the chapter uses. They are DENSE numbers: the
/// marketing figures are often twice as large because they assume 2:4 structured sparsity, which
/// a dense matrix multiplication cannot use.

namespace inferlab::ex03 {

/// @brief The two numbers of a GPU that the roofline model needs.
struct Gpu {
  const char* name;
  double peak_flops;        ///< dense BF16 tensor-core FLOP/s
  double bytes_per_second;  ///< HBM bandwidth, bytes/s
};

/// NVIDIA A100 SXM 80 GB: about 312 dense BF16 TFLOP/s and about 2.0 TB/s of HBM bandwidth.
inline constexpr Gpu kA100Sxm80{"A100 SXM 80GB", 312e12, 2.0e12};
/// NVIDIA H100 SXM: about 989 dense BF16 TFLOP/s and about 3.35 TB/s of HBM3 bandwidth.
inline constexpr Gpu kH100Sxm{"H100 SXM", 989e12, 3.35e12};

/// Llama-3-8B, the chapter's worked example: about 8.0e9 parameters.
inline constexpr double kLlama3_8bParams = 8.0e9;
/// Bytes per BF16 value.
inline constexpr double kBf16Bytes = 2.0;

/// @brief Ridge point I* = peak FLOP/s / bandwidth, in FLOP per byte: a kernel doing fewer FLOPs
/// per byte it reads from HBM is memory-bound on @p gpu, one doing more is compute-bound.
double ridge_point(const Gpu& gpu);

/// @brief Speed-up of batch-1 decode when moving from @p from to @p to. Batch-1 decode reads
/// every weight once per token and does about one FLOP per byte, so it is memory-bound.
double decode_speedup(const Gpu& from, const Gpu& to);

/// @brief Speed-up (an upper bound) of a long prefill when moving from @p from to @p to. A
/// prefill multiplies the weights by hundreds or thousands of tokens at once, so it is
/// compute-bound.
double prefill_speedup(const Gpu& from, const Gpu& to);

/// @brief The min-p cut: tokens with probability below this value are dropped.
/// @param min_p  the min-p parameter, in [0, 1].
/// @param p_max  the probability of the most probable token.
double min_p_threshold(double min_p, double p_max);

/// @brief Lower bound on the time of one batch-1 decode step, in seconds: all weights must be
/// read from HBM once per token (the KV cache, ignored here, only adds bytes).
/// @param n_params         number of parameters.
/// @param bytes_per_param  e.g. kBf16Bytes.
double decode_seconds_per_token(double n_params, double bytes_per_param, const Gpu& gpu);

/// @brief Batch size at which decoding @p n_params parameters stops being memory-bound: the
/// step's compute time, 2 * n_params * B / peak, equals the time to read the weights once.
double critical_batch_size(double n_params, double bytes_per_param, const Gpu& gpu);

/// @brief Lower bound on the time of a prefill of @p prompt_tokens tokens at peak FLOP/s, in
/// seconds: 2 FLOPs (a multiply and an add) per parameter per token, attention ignored.
double prefill_seconds(double n_params, double prompt_tokens, const Gpu& gpu);

/// @brief Tokens per second streamed to one user, given the request's TPOT in seconds.
double streaming_tokens_per_second(double tpot);

}  // namespace inferlab::ex03
