// Decode throughput against the number of sequences decoding together, and the ridge it implies.
#include "inferlab/serving/decode_sweep.hpp"

#include <algorithm>

#include "inferlab/runtime/metrics.hpp"
#include "inferlab/serving/decode_throughput.hpp"

namespace inferlab {

DecodeSweep decode_throughput_sweep(const Model& model, int context, int steps, int reps,
                                    Device device) {
  DecodeSweep s{context, steps, reps, {}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int b : {1, 2, 4, 8, 16, 32, 64}) {
    std::vector<double> samples;
    for (int r = 0; r < reps; ++r)
      samples.push_back(measure_decode_throughput(model, b, context, steps, device).step_seconds);
    const Summary t = summarize(samples);
    DecodeSweepRow row;
    row.batch = b;
    row.step_seconds = t.p50;
    row.step_spread = t.p50 > 0 ? (t.max - t.min) / t.p50 : 0.0;
    row.tokens_per_second = b / row.step_seconds;
    row.tokens_per_second_per_sequence = 1.0 / row.step_seconds;
    row.vs_batch1 = row.tokens_per_second /
                    (s.rows.empty() ? row.tokens_per_second : s.rows.front().tokens_per_second);
    s.max_spread = std::max(s.max_spread, row.step_spread);
    if (b == 16) s.speedup_at_16 = row.vs_batch1;
    s.rows.push_back(row);
  }
  // Batch 1 is bound by reading the weights, batch 64 by the arithmetic (chapter 03).
  const double params = static_cast<double>(model.config().n_params());
  s.weight_bytes = model.bytes_read_per_token();
  s.bytes_per_weight = s.weight_bytes / params;
  s.bandwidth = s.weight_bytes / s.rows.front().step_seconds;
  s.flops = 2.0 * params * 64 / s.rows.back().step_seconds;
  return s;
}

}  // namespace inferlab
