// Exercise 06, the checked answer: chapter 03's self-test through the roofline model.

#include <algorithm>

#include "exercise.hpp"

namespace inferlab::ex06 {

double decode_step_seconds(double params, double bytes_per_param, int batch, const Gpu& gpu) {
  const double compute = 2.0 * params * batch / gpu.peak_flops;
  const double memory = params * bytes_per_param / gpu.bandwidth;  // shared by the whole batch
  return std::max(compute, memory);
}

double prefill_seconds(double params, double bytes_per_param, int tokens, const Gpu& gpu) {
  // A prompt is processed like a batch of `tokens` sequences of one token each.
  return decode_step_seconds(params, bytes_per_param, tokens, gpu);
}

double decode_speedup(const Gpu& from, const Gpu& to, int batch) {
  return decode_step_seconds(kParams, kBf16, batch, from) / decode_step_seconds(kParams, kBf16, batch, to);
}

double prefill_speedup(const Gpu& from, const Gpu& to, int tokens) {
  return prefill_seconds(kParams, kBf16, tokens, from) / prefill_seconds(kParams, kBf16, tokens, to);
}

double linear_intensity(int batch, int d, double bytes_per_number) {
  const double flops = 2.0 * batch * double(d) * d;
  const double bytes = bytes_per_number * (double(d) * d + 2.0 * batch * d);
  return flops / bytes;
}

double decode_attention_intensity(int batch, int context, int n_heads, int n_kv_heads,
                                  int head_dim, double bytes_per_number) {
  // Nothing is shared between sequences: the batch multiplies FLOPs and bytes alike, so it
  // cancels. Within a sequence, g = n_heads / n_kv_heads query heads share each KV byte.
  const double flops = double(batch) * context * 4.0 * n_heads * head_dim;
  const double bytes = double(batch) * context * 2.0 * n_kv_heads * head_dim * bytes_per_number;
  return flops / bytes;
}

double tpot(double ttft, double e2e, int output_tokens) {
  // N tokens have N - 1 gaps between them; the first token's wait is TTFT, not a gap.
  return (e2e - ttft) / (output_tokens - 1);
}

double per_user_tokens_per_second(double tpot_seconds) { return 1.0 / tpot_seconds; }

}  // namespace inferlab::ex06
