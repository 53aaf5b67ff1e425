#pragma once
/// @file kv_sequence.hpp
/// @brief One sequence's keys and values: a block table into a KVPool, and how many positions
/// are valid.

#include <vector>

#include "inferlab/runtime/kv_pool.hpp"

namespace inferlab {

/// @brief A sequence's view of a pool: logical block i of the sequence (positions
/// i*B .. i*B+B-1, B = block_size) is physical block blocks()[i] of the pool.
///
/// The sequence does not own its blocks: whoever manages memory (a contiguous cache, chapter
/// 05's block manager) appends, replaces and releases them.
class KVSequence {
 public:
  /// @brief An empty sequence over @p pool (which must outlive it): no block, length 0.
  explicit KVSequence(KVPool& pool) : pool_(&pool) {}
  virtual ~KVSequence() = default;
  KVSequence(KVSequence&&) noexcept = default;             ///< moves the table
  KVSequence& operator=(KVSequence&&) noexcept = default;  ///< moves the table

  KVPool& pool() const { return *pool_; }                     ///< where the blocks are
  const std::vector<int>& blocks() const { return blocks_; }  ///< the block table
  /// @brief Positions the blocks can hold: blocks().size() * block_size.
  int capacity() const { return static_cast<int>(blocks_.size()) * pool_->block_size(); }
  /// @brief Positions 0..length()-1 hold valid entries.
  int length() const { return length_; }
  /// @brief Declares positions 0..length-1 valid (the forward pass does this after writing
  /// them; speculative decoding rolls back by lowering it).
  /// @throws inferlab::Error if @p length is outside [0, capacity()].
  void set_length(int length);
  /// @brief Forgets every position (the blocks stay in the table).
  void clear() { length_ = 0; }

  /// @brief Adds physical block @p id at the end of the table.
  void append_block(int id);
  /// @brief Replaces logical block @p index by physical block @p id (copy-on-write).
  void replace_block(int index, int id);
  /// @brief Empties the table and the length (the caller frees the blocks).
  void release_blocks() { blocks_.clear(), length_ = 0; }

  /// @brief The pool row that holds position @p pos.
  std::size_t row(int pos) const {
    const int b = pool_->block_size();
    return std::size_t(blocks_[std::size_t(pos / b)]) * b + std::size_t(pos % b);
  }

  /// @brief Stores @p rows tokens' keys and values (each (rows, KV) floats) at positions
  /// pos..pos+rows-1 of @p layer (host pools only: the CPU forward pass).
  /// @throws inferlab::Error for positions beyond capacity() or a pool not in host memory.
  void store(int layer, int pos, int rows, const float* k, const float* v);
  /// @brief Views of one layer's keys / values through this sequence's block table (host
  /// pools only), for the attention kernels.
  kernels::KVRowsView keys(int layer) const;
  kernels::KVRowsView values(int layer) const;  ///< see keys()

  /// @brief Copies position @p from's keys and values (every layer, scales included) to
  /// position @p to; the length is unchanged. Speculative decoding uses it to close the gaps a
  /// verified tree path leaves (see kv_rollback.hpp).
  /// @throws inferlab::Error if either position is outside [0, capacity()).
  void copy_position(int from, int to);

  /// @brief Bytes one position occupies (scales included).
  std::size_t bytes_per_token() const { return pool_->bytes_per_token(); }
  /// @brief Bytes the valid positions occupy.
  std::size_t bytes_in_use() const { return bytes_per_token() * std::size_t(length_); }
  /// @brief Storage type of the pool.
  DType type() const { return pool_->type(); }

 private:
  const HostKVPool& host_pool(const char* what) const;
  kernels::KVRowsView with_table(kernels::KVRowsView view) const;
  KVPool* pool_;
  std::vector<int> blocks_;
  int length_ = 0;
};

}  // namespace inferlab
