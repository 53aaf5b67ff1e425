// Exercise 06, the checked answer: chapter 03's roofline, as functions.

#include <algorithm>

#include "exercise.hpp"

namespace inferlab::ex06 {

double attainable_flops(double intensity, const Gpu& gpu) {
  // Below the ridge the bytes set the pace (bandwidth x intensity), above it the FLOPs do.
  return std::min(gpu.peak_flops, gpu.bandwidth * intensity);
}

double decode_step_seconds(double params, double bytes_per_param, int batch, const Gpu& gpu) {
  const double compute = 2.0 * params * batch / gpu.peak_flops;
  const double memory = params * bytes_per_param / gpu.bandwidth;  // shared by the whole batch
  return std::max(compute, memory);
}

double decode_speedup(const Gpu& from, const Gpu& to, int batch) {
  return decode_step_seconds(kParams, kBf16, batch, from) /
         decode_step_seconds(kParams, kBf16, batch, to);
}

double linear_intensity(int batch, int d, double bytes_per_number) {
  const double flops = 2.0 * batch * double(d) * d;
  const double bytes = bytes_per_number * (double(d) * d + 2.0 * batch * d);
  return flops / bytes;
}

double decode_attention_intensity(int batch, int context, int n_heads, int n_kv_heads, int head_dim,
                                  double bytes_per_number) {
  // Nothing is shared between sequences: the batch multiplies FLOPs and bytes alike, so it
  // cancels. Within a sequence, g = n_heads / n_kv_heads query heads share each KV byte.
  const double flops = double(batch) * context * 4.0 * n_heads * head_dim;
  const double bytes = double(batch) * context * 2.0 * n_kv_heads * head_dim * bytes_per_number;
  return flops / bytes;
}

double kv_byte_share(double weight_bytes, int batch, double context, double kv_bytes_per_token) {
  // The weights are read once for the batch; every sequence reads its own cache.
  const double kv = double(batch) * context * kv_bytes_per_token;
  return kv / (weight_bytes + kv);
}

}  // namespace inferlab::ex06
