#pragma once
/// @file roofline_measure.hpp
/// @brief This machine's points on its roofline: the core's CPU kernels (a linear layer, decode
/// attention) timed here in float32, with FLOPs and bytes counted as the cost model of
/// roofline.hpp counts them, and the critical batch of a linear layer found by a batch sweep.
///
/// Every timed kernel cycles through several copies of its data, together 16x the last-level
/// cache, so that its operands come from memory as in a real forward pass: timing one copy
/// again and again would let a 64 MiB layer run partly from a 48 MiB cache and put a
/// memory-bound point above the memory roof. 4x was not enough on a Zen 3 (32 MiB L3, which
/// keeps part of a cyclic stream that LRU would evict): a batch-1 layer cycling through
/// 128 MiB or 256 MiB read 10-20 % faster than the bandwidth probe over 512 MiB; through
/// 512 MiB, like the probe, it read the same.

#include <functional>
#include <string>
#include <vector>

namespace inferlab {

/// @brief One timed kernel: its FLOPs and bytes (counted as the model counts them) and the best
/// time of the repetitions.
struct MeasuredPoint {
  std::string name;      ///< label of the kernel and its sizes
  double flops = 0.0;    ///< FLOPs of one call, as the cost model counts them
  double bytes = 0.0;    ///< bytes of one call, every operand read once
  double seconds = 0.0;  ///< best time of one call over the repetitions
  /// @brief Arithmetic intensity, FLOP per byte (0 when nothing is moved).
  double intensity() const { return bytes > 0.0 ? flops / bytes : 0.0; }
  /// @brief Achieved FLOP/s (0 if the time is 0).
  double flops_per_second() const { return seconds > 0.0 ? flops / seconds : 0.0; }
  /// @brief Achieved bytes/s (0 if the time is 0).
  double bytes_per_second() const { return seconds > 0.0 ? bytes / seconds : 0.0; }
};

/// @brief Times kernels::matmul_packed (weights packed beforehand, as the forward pass packs
/// them) as a linear layer of @p tokens tokens, n = @p n_in, d = @p d_out, float32 (the median
/// of @p reps after a warm-up). Each call uses the next of several
/// copies of the weights, together 16x the last-level cache, so that the weights come from
/// memory as in a real forward pass, never from the cache (which would put a memory-bound
/// point above the memory roof).
MeasuredPoint measure_linear_point(int tokens, int n_in, int d_out, int reps);

/// @brief Times kernels::attention_cpu for ONE decode token over @p context cached positions
/// (one layer, one sequence, float32 cache), cycling through copies of the cache like
/// measure_linear_point().
MeasuredPoint measure_decode_attention_point(int context, int n_heads, int n_kv_heads,
                                             int head_size, int reps);

/// @brief A batch sweep of one linear layer, and the critical batch read off it.
struct EmpiricalCriticalBatch {
  /// @brief The timing at one batch size.
  struct Row {
    int batch = 0;                   ///< tokens in the step (the B of x (B, n))
    double seconds = 0.0;            ///< median time of one step of this batch
    double tokens_per_second = 0.0;  ///< batch / seconds
  };
  std::vector<Row> rows;  ///< one per batch measured, in the order asked (ascending)
  /// Where the two asymptotes of the step time meet, the roofline's own construction: the flat
  /// part (t(1), memory-bound) and the line through the origin with the largest batch's time per
  /// token (compute-bound): B* = t(1) / (t(Bmax) / Bmax). Above it an extra sequence adds
  /// (almost) no tokens/s; below it, it adds (almost) a full one.
  double asymptote_batch = 0.0;
  /// The first batch whose doubling gains less than 25 % tokens/s (0 if none did): where
  /// "tokens/s per extra sequence stops growing" shows in the table.
  int knee_batch = 0;
};

/// @brief Times a linear layer (n_in -> d_out, matmul_packed) at each batch in @p batches
/// (ascending, the first 1; weights cycled as in measure_linear_point()) and finds the critical
/// batch empirically.
/// @p progress, if set, is called with one line per batch.
EmpiricalCriticalBatch measure_critical_batch(
    int n_in, int d_out, const std::vector<int>& batches, int reps,
    const std::function<void(const std::string&)>& progress = {});

}  // namespace inferlab
