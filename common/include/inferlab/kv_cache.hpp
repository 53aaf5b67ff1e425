#pragma once
/// @file kv_cache.hpp
/// @brief A contiguous per-sequence key/value cache (GQA-aware: it stores Nkv heads, not Nh),
/// in float32, float16 or int8 with per-(token, head) scales.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/model.hpp"

namespace inferlab {

using kernels::KVType;

/// @brief Parses "f32", "f16" or "int8". @throws inferlab::Error naming the valid choices.
KVType parse_kv_type(const std::string& name);
/// @brief "f32", "f16" or "int8".
const char* kv_type_name(KVType type);

/// @brief Keys and values of one sequence.
///
/// Layout (S = capacity): keys and values each (L, S, KV) elements of the storage type, row p of
/// layer l holding the token at position p with all Nkv heads side by side; for int8, scales
/// (L, S, Nkv) floats for keys and for values.
/// @note Bytes per token = 2 * L * KV * element bytes (+ 2 * L * Nkv * 4 for int8 scales).
class KVCache {
 public:
  /// @brief Allocates room for @p capacity positions (0 = the model's seq_len).
  /// @throws inferlab::Error if capacity is outside [1, seq_len].
  explicit KVCache(const ModelConfig& config, int capacity = 0, KVType type = KVType::f32);

  /// @brief Stores @p rows tokens' keys and values (each (rows, KV) floats) at positions
  /// pos..pos+rows-1 of @p layer, converting to the storage type.
  void store(int layer, int pos, int rows, const float* k, const float* v);

  /// @brief Views of one layer's keys / values, for the attention kernels.
  kernels::KVRowsView keys(int layer) const;
  kernels::KVRowsView values(int layer) const;  ///< see keys()

  int capacity() const { return capacity_; }  ///< S: positions the cache can hold
  int kv_dim() const { return kv_dim_; }      ///< KV = Nkv * hs values per row
  KVType type() const { return type_; }       ///< storage type
  /// @brief Positions 0..length()-1 hold valid entries.
  int length() const { return length_; }
  /// @brief Declares positions 0..length-1 valid (forward() does this after writing them).
  /// @throws inferlab::Error if @p length is outside [0, capacity].
  void set_length(int length);
  /// @brief Forgets every position (the memory stays allocated).
  void clear() { length_ = 0; }
  /// @brief Copies position @p from's keys and values (every layer, scales included) to
  /// position @p to; the length is unchanged. Speculative decoding uses it to close the gaps
  /// a verified tree path leaves (see speculative.hpp, KVRollback).
  /// @throws inferlab::Error if either position is outside [0, capacity).
  void copy_position(int from, int to);
  /// @brief Bytes one token occupies (keys + values of every layer, scales included).
  std::size_t bytes_per_token() const;
  /// @brief Bytes the cache holds (allocated for the full capacity, not only used).
  std::size_t bytes() const { return bytes_per_token() * capacity_; }
  /// @brief Bytes the valid positions occupy.
  std::size_t bytes_in_use() const { return bytes_per_token() * length_; }

 private:
  std::size_t row_offset(int layer, int pos) const {
    return (std::size_t(layer) * capacity_ + pos) * kv_dim_;
  }
  int n_layers_, n_kv_heads_, head_size_, capacity_, kv_dim_, length_ = 0;
  KVType type_;
  std::vector<std::uint8_t> keys_, values_;  // raw storage, (L, S, KV) elements of type_
  std::vector<float> key_scales_, value_scales_;  // (L, S, Nkv), int8 only
};

}  // namespace inferlab
