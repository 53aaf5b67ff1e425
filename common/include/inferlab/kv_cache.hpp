#pragma once
/// @file kv_cache.hpp
/// @brief A contiguous per-sequence key/value cache (GQA-aware: it stores Nkv heads, not Nh).

#include <cstddef>
#include <vector>

#include "inferlab/model.hpp"

namespace inferlab {

/// @brief Keys and values of one sequence, float32.
///
/// Layout: keys (L, S, KV) and values (L, S, KV), S = capacity. Row p of layer l holds the
/// key (or value) of the token at position p, all Nkv heads side by side.
/// @note Bytes = 2 * L * S * KV * sizeof(float).
class KVCache {
 public:
  /// @brief Allocates room for @p capacity positions (0 = the model's seq_len).
  KVCache(const ModelConfig& config, int capacity = 0);

  float* keys(int layer) { return keys_.data() + layer_offset(layer); }      ///< (S, KV)
  float* values(int layer) { return values_.data() + layer_offset(layer); }  ///< (S, KV)
  const float* keys(int layer) const { return keys_.data() + layer_offset(layer); }
  const float* values(int layer) const { return values_.data() + layer_offset(layer); }

  int capacity() const { return capacity_; }
  int kv_dim() const { return kv_dim_; }
  /// @brief Positions 0..length()-1 hold valid entries.
  int length() const { return length_; }
  void set_length(int length);
  void clear() { length_ = 0; }
  /// @brief Bytes the cache holds (allocated, not only used).
  std::size_t bytes() const { return (keys_.size() + values_.size()) * sizeof(float); }

 private:
  std::size_t layer_offset(int layer) const {
    return static_cast<std::size_t>(layer) * capacity_ * kv_dim_;
  }
  int n_layers_, capacity_, kv_dim_, length_ = 0;
  std::vector<float> keys_, values_;
};

}  // namespace inferlab
