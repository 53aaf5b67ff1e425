#pragma once
/// @file kv_rollback.hpp
/// @brief Undoing a speculative round in a sequence's KV storage (chapter 07): drop the rejected
/// tail, and close the gaps a verified tree path leaves, in a contiguous KVCache or in a paged
/// sequence whose blocks come from a BlockAllocator.

#include <span>

#include "inferlab/runtime/block_allocator.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/kv_sequence.hpp"

namespace inferlab {

/// @brief What speculative decoding needs from a sequence's KV storage to undo a round: drop
/// the rejected tail, and close the gaps a verified tree path leaves. The contiguous KVCache
/// implements it with ContiguousKVRollback; a paged sequence with PagedKVRollback, by editing
/// its block table (truncate frees whole blocks past the new end; keep_rows copies the kept
/// rows into place, copying a shared block first).
class KVRollback {
 public:
  virtual ~KVRollback() = default;
  /// @brief Positions that hold valid keys and values.
  virtual int length() const = 0;
  /// @brief Forgets every position >= @p length (rejected draft tokens).
  /// @throws inferlab::Error if @p length is outside [0, length()].
  virtual void truncate(int length) = 0;
  /// @brief Keeps positions [0, base) and the listed rows, moved to base, base + 1, ...: the
  /// accepted path of a verified tree. The length becomes base + rows.size().
  /// @param base the first row the tree wrote (the verified context's length)
  /// @param rows (m) ascending rows in [base, length()) (a chain's accepted prefix is
  ///        base..base+m-1, which moves nothing)
  /// @throws inferlab::Error if a row is out of range or the list is not ascending.
  virtual void keep_rows(int base, std::span<const int> rows) = 0;
};

/// @brief KVRollback over a contiguous KVCache: truncation is set_length; keep_rows copies
/// each kept row down (O(rows x L x KV) bytes, a handful of rows per round).
class ContiguousKVRollback final : public KVRollback {
 public:
  /// @brief Wraps @p cache, which must outlive this object.
  explicit ContiguousKVRollback(KVCache& cache) : cache_(&cache) {}
  int length() const override { return cache_->length(); }       ///< see KVRollback
  void truncate(int length) override;                            ///< see KVRollback
  void keep_rows(int base, std::span<const int> rows) override;  ///< see KVRollback

 private:
  KVCache* cache_;
};

/// @brief KVRollback over a paged KVSequence whose blocks come from a BlockAllocator (chapter
/// 05's memory): rolling back gives whole blocks back, so rejected guesses never hold memory.
///
/// A block another table also holds (reference count > 1: a fork, a shared prefix) is never
/// written: reserve() and keep_rows() give the sequence its own copy first (copy-on-write, the
/// block-table edits of paged_sequence.hpp that PagedKVManager makes too). truncate() only
/// releases references, so it never copies.
class PagedKVRollback final : public KVRollback {
 public:
  /// @brief Wraps @p sequence and the @p allocator its blocks come from (both must outlive this
  /// object; the sequence's pool must have allocator.num_blocks() blocks).
  /// @throws inferlab::Error if the pool and the allocator disagree on the block count.
  PagedKVRollback(KVSequence& sequence, BlockAllocator& allocator);
  int length() const override { return seq_->length(); }  ///< see KVRollback
  /// @brief see KVRollback; also releases every block that holds no position < @p length, so
  /// the table keeps ceil(length / block_size) blocks.
  void truncate(int length) override;
  /// @brief see KVRollback; a destination row in a shared block is written into a private copy
  /// of that block. The blocks past the new end are released as by truncate().
  void keep_rows(int base, std::span<const int> rows) override;
  /// @brief Prepares positions [length(), @p length) for a forward call to write: appends
  /// blocks from the allocator until the table covers them, and replaces every shared block
  /// among those positions by a private copy. The valid length does not change.
  /// @throws inferlab::Error (nothing changed) when the allocator has too few free blocks.
  void reserve(int length);
  /// @brief Blocks the next reserve(@p length) takes from the allocator (new and copied).
  int blocks_needed(int length) const;

 private:
  KVSequence* seq_;
  BlockAllocator* alloc_;
};

}  // namespace inferlab
