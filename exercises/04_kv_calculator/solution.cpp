// Exercise 04, the checked answer: the KV-cache calculator.

#include <cmath>

#include "exercise.hpp"

namespace inferlab::ex04 {

double kv_bytes_per_token(const KvModel& model, double bytes_per_value) {
  // 2 (key and value) x L x Nkv x hs numbers: GQA stores the 8 KV heads, not the 64 query heads.
  return 2.0 * model.layers * model.kv_heads * model.head_dim * bytes_per_value;
}

double kv_bytes_per_sequence(const KvModel& model, double bytes_per_value, long long tokens) {
  return kv_bytes_per_token(model, bytes_per_value) * double(tokens);
}

long long max_concurrent_sequences(const KvModel& model, double bytes_per_weight,
                                   double kv_bytes_per_value, long long context, int gpus,
                                   double bytes_per_gpu) {
  // Tensor parallelism splits weights and KV heads over the GPUs: their memory pools.
  const double free_bytes = gpus * bytes_per_gpu - model.params * bytes_per_weight;
  if (free_bytes <= 0.0) return 0;
  return static_cast<long long>(
      std::floor(free_bytes / kv_bytes_per_sequence(model, kv_bytes_per_value, context)));
}

}  // namespace inferlab::ex04
