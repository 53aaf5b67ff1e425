#pragma once
/// @file kv_cache.hpp
/// @brief The contiguous per-sequence key/value cache of chapter 02 (GQA-aware: it stores Nkv
/// heads, not Nh), in float32, float16 or int8 with per-(token, head) scales.

#include <cstddef>
#include <memory>
#include <string>

#include "inferlab/runtime/kv_sequence.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief Keys and values of one sequence in one contiguous allocation: a pool of ONE block of
/// `capacity` positions, so position p is row p. In host memory by default; a model runner
/// makes one on its own device (make_cache() in runner.hpp).
///
/// Layout (S = capacity): keys and values each (L, S, KV) elements of the storage type, row p of
/// layer l holding the token at position p with all Nkv heads side by side; for int8, scales
/// (L, S, Nkv) floats for keys and for values.
/// @note Bytes per token = 2 * L * KV * element bytes (+ 2 * L * Nkv * 4 for int8 scales).
class KVCache : public KVSequence {
 public:
  /// @brief Allocates room for @p capacity positions (0 = the model's seq_len).
  /// @throws inferlab::Error if capacity is outside [1, seq_len].
  explicit KVCache(const ModelConfig& config, int capacity = 0, DType type = DType::f32);

  /// @brief Takes over @p one_block_pool (a pool of exactly one block, on any device) and
  /// addresses it as a contiguous cache of pool->block_size() positions.
  /// @throws inferlab::Error if the pool is missing or has more than one block.
  explicit KVCache(std::unique_ptr<KVPool> one_block_pool);

  int kv_dim() const { return pool().config().kv_dim(); }  ///< KV = Nkv * hs values per row
  /// @brief Bytes the cache holds (allocated for the full capacity, not only used).
  std::size_t bytes() const { return bytes_per_token() * std::size_t(capacity()); }

 private:
  std::unique_ptr<KVPool> own_;  // the one-block pool (on the heap: moves keep its address)
};

}  // namespace inferlab
