// Exercise 03, the checked answer: chapter 01's self-test as functions.

#include "exercise.hpp"

namespace inferlab::ex03 {

double ridge_point(const Gpu& gpu) { return gpu.peak_flops / gpu.bytes_per_second; }

double decode_speedup(const Gpu& from, const Gpu& to) {
  // Batch-1 decode waits on HBM: a faster memory, not faster arithmetic, makes it faster.
  return to.bytes_per_second / from.bytes_per_second;
}

double prefill_speedup(const Gpu& from, const Gpu& to) {
  // A long prefill keeps the tensor cores busy: the FLOP/s ratio bounds the gain.
  return to.peak_flops / from.peak_flops;
}

double min_p_threshold(double min_p, double p_max) { return min_p * p_max; }

double decode_seconds_per_token(double n_params, double bytes_per_param, const Gpu& gpu) {
  return n_params * bytes_per_param / gpu.bytes_per_second;
}

double critical_batch_size(double n_params, double bytes_per_param, const Gpu& gpu) {
  // 2 N B / P = N b / BW  =>  B = (b / 2) * P / BW: for BF16 (b = 2) the ridge point itself,
  // because a linear layer's arithmetic intensity is about the number of tokens in the batch.
  const double weight_read_seconds = decode_seconds_per_token(n_params, bytes_per_param, gpu);
  const double flops_per_sequence = 2.0 * n_params;
  return weight_read_seconds * gpu.peak_flops / flops_per_sequence;
}

double prefill_seconds(double n_params, double prompt_tokens, const Gpu& gpu) {
  return 2.0 * n_params * prompt_tokens / gpu.peak_flops;
}

double streaming_tokens_per_second(double tpot) { return 1.0 / tpot; }

}  // namespace inferlab::ex03
