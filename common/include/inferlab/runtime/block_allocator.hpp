#pragma once
/// @file block_allocator.hpp
/// @brief The bookkeeping of PagedAttention's physical blocks: a free list and a reference
/// count per block. Stores no data (the blocks themselves live in a KVPool).

#include <cstdint>
#include <vector>

namespace inferlab {

/// @brief Hands out block ids 0..num_blocks-1. allocate() and release() are O(1).
///
/// A block's reference count is the number of block tables that hold it: 1 after allocate(),
/// +1 for every sequence that shares it (fork, or a prefix cache), -1 at release(); at 0 it
/// goes back to the free list.
class BlockAllocator {
 public:
  /// @throws inferlab::Error if num_blocks < 1.
  explicit BlockAllocator(int num_blocks);

  int num_blocks() const { return static_cast<int>(ref_.size()); }  ///< blocks in all
  int num_free() const { return static_cast<int>(free_.size()); }   ///< blocks with count 0
  int num_used() const { return num_blocks() - num_free(); }        ///< blocks with count > 0

  /// @brief Takes a free block (reference count 1).
  /// @throws inferlab::Error when no block is free (check num_free() first).
  int allocate();
  /// @brief One more table holds @p id. @throws inferlab::Error if @p id is not in use.
  void retain(int id);
  /// @brief One table fewer holds @p id; at count 0 it is free again.
  /// @throws inferlab::Error if @p id is not in use (a double free).
  void release(int id);
  /// @brief Tables holding @p id (0 when free).
  int ref_count(int id) const;
  /// @brief Changes with every allocate(), retain() and release(): lets callers memoise a
  /// result computed from the reference counts.
  std::uint64_t version() const { return version_; }

 private:
  std::vector<int> ref_;   // (num_blocks) reference counts
  std::vector<int> free_;  // stack of free ids: the most recently freed is reused first
  std::uint64_t version_ = 0;
};

}  // namespace inferlab
