#pragma once
/// @file decode_sweep.hpp
/// @brief What batching buys on the real model (chapter 04's `--sweep`): decode throughput at
/// 1, 2, 4, ..., 64 sequences decoding together, each the median of a few runs, and the machine's
/// ridge point that the ends of the sweep imply.
#include <vector>

#include "inferlab/base/device.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief One batch size of the sweep.
struct DecodeSweepRow {
  int batch = 0;                                ///< sequences decoding together
  double step_seconds = 0.0;                    ///< median over the runs of the mean step time
  double step_spread = 0.0;                     ///< (max - min) / median of the runs' step times
  double tokens_per_second = 0.0;               ///< batch / step_seconds
  double tokens_per_second_per_sequence = 0.0;  ///< 1 / step_seconds: what one user sees
  double vs_batch1 = 0.0;                       ///< tokens_per_second / the batch-1 row's
};

/// @brief The sweep and what chapter 03's roofline reads from its ends.
struct DecodeSweep {
  int context = 0;                   ///< cached tokens per sequence
  int steps = 0;                     ///< decode steps timed per run
  int reps = 0;                      ///< runs per batch size
  std::vector<DecodeSweepRow> rows;  ///< batch 1, 2, 4, ..., 64
  double max_spread = 0.0;           ///< the widest step_spread of any row
  double speedup_at_16 = 0.0;        ///< tokens/s at batch 16 / at batch 1
  double weight_bytes = 0.0;         ///< the weights as stored (what batch 1 streams)
  double bytes_per_weight = 0.0;     ///< weight_bytes / the parameter count (4 in float32)
  double bandwidth = 0.0;            ///< weight_bytes / batch 1's step, bytes/s
  double flops = 0.0;                ///< 2 x params x 64 / batch 64's step, FLOP/s
  /// @brief flops / bandwidth, FLOP/byte: this machine's ridge.
  double ridge() const { return flops / bandwidth; }
  /// @brief The batch where decode turns compute-bound: a step of B sequences does 2 x B
  /// FLOP per weight read (intensity 2B / bytes_per_weight, B / 2 in float32), which meets the
  /// ridge at B = ridge x bytes_per_weight / 2.
  double turnover_batch() const { return ridge() * bytes_per_weight / 2.0; }
  /// @brief True when the ridge cannot be trusted: single samples, or a spread above 25%.
  bool too_noisy() const { return reps == 1 || max_spread > 0.25; }
};

/// @brief Runs measure_decode_throughput() @p reps times at every batch size 1, 2, 4, ..., 64
/// (@p context cached tokens each, @p steps timed steps) on @p device and keeps the medians.
/// One sample can be off by 2x on a busy machine, enough to move the ridge by as much.
/// @throws inferlab::Error if context + steps + 1 exceeds the model's context.
DecodeSweep decode_throughput_sweep(const Model& model, int context, int steps, int reps,
                                    Device device);

}  // namespace inferlab
