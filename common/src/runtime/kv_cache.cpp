// The contiguous per-sequence KV cache: a one-block host pool.
#include "inferlab/runtime/kv_cache.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {
std::unique_ptr<KVPool> one_block_pool(const ModelConfig& config, int capacity, DType type) {
  const int S = capacity == 0 ? config.seq_len : capacity;
  if (S <= 0 || S > config.seq_len)
    throw Error(fmt::format("KV cache capacity {} outside [1, seq_len = {}]", S, config.seq_len));
  return std::make_unique<HostKVPool>(config, 1, S, type);
}
}  // namespace

KVCache::KVCache(const ModelConfig& config, int capacity, DType type)
    : KVCache(one_block_pool(config, capacity, type)) {}

namespace {
KVPool& checked_one_block(const std::unique_ptr<KVPool>& pool) {
  if (!pool || pool->num_blocks() != 1)
    throw Error("KVCache: a contiguous cache needs a pool of exactly one block");
  return *pool;
}
}  // namespace

KVCache::KVCache(std::unique_ptr<KVPool> one_block_pool)
    : KVSequence(checked_one_block(one_block_pool)), own_(std::move(one_block_pool)) {
  append_block(0);
}

}  // namespace inferlab
