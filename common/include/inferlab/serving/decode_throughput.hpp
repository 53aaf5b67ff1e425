#pragma once
/// @file decode_throughput.hpp
/// @brief The decode-throughput sweep: batched decode on the real model, timed through the
/// model runner, one batch size at a time (chapter 04's "tokens/s against the batch" table and
/// bench_runner).

#include "inferlab/base/device.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief One row of the decode-throughput sweep.
struct DecodeThroughput {
  int batch = 0;                                ///< concurrent sequences decoding together
  double step_seconds = 0.0;                    ///< mean time of one batched decode step
  double tokens_per_second = 0.0;               ///< batch / step_seconds
  double tokens_per_second_per_sequence = 0.0;  ///< 1 / step_seconds: what one user sees
};

/// @brief Measures batched decode on the real model: @p batch sequences, each prefilled with
/// @p context synthetic tokens, then @p steps decode steps of forward_batch (one token each),
/// timed together after one warm-up step.
/// @throws inferlab::Error if context + steps + 1 exceeds the model's context.
DecodeThroughput measure_decode_throughput(const Model& model, int batch, int context, int steps,
                                           Device device = Device::cpu);

}  // namespace inferlab
