// The contiguous per-sequence KV cache.
#include "inferlab/kv_cache.hpp"

#include <fmt/format.h>

#include "inferlab/error.hpp"

namespace inferlab {

KVCache::KVCache(const ModelConfig& config, int capacity)
    : n_layers_(config.n_layers),
      capacity_(capacity == 0 ? config.seq_len : capacity),
      kv_dim_(config.kv_dim()) {
  if (capacity_ <= 0 || capacity_ > config.seq_len) {
    throw Error(fmt::format("KV cache capacity {} outside [1, seq_len = {}]", capacity_,
                            config.seq_len));
  }
  const std::size_t n = std::size_t(n_layers_) * capacity_ * kv_dim_;
  keys_.assign(n, 0.0f);
  values_.assign(n, 0.0f);
}

void KVCache::set_length(int length) {
  if (length < 0 || length > capacity_) {
    throw Error(fmt::format("KV cache length {} outside [0, {}]", length, capacity_));
  }
  length_ = length;
}

}  // namespace inferlab
