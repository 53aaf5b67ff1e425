#pragma once
/// @file paged_sequence.hpp
/// @brief A paged sequence's block table, edited against the BlockAllocator its blocks come
/// from: growth, copy-on-write, truncation, fork and release. The serving engine's block manager
/// (PagedKVManager, chapter 05) and speculative decoding's rollback (PagedKVRollback, chapter
/// 07) both edit their tables through these functions.
///
/// Logical block i of a sequence holds positions i*B .. i*B+B-1 (B = the pool's block size).
/// A block whose reference count is above 1 is shared (a fork, a prefix cache): it is never
/// written; a write into it goes to a private copy first (copy-on-write). Every function keeps
/// the allocator's reference counts equal to the number of tables holding each block.

#include "inferlab/runtime/block_allocator.hpp"
#include "inferlab/runtime/kv_sequence.hpp"

namespace inferlab::paged {

/// @brief Blocks a write of positions [@p from, @p to) of @p seq takes from @p alloc: the new
/// blocks the table needs to cover them, plus a private copy of every shared block among them.
/// @param seq the sequence (its table and its pool's block size)
/// @param alloc the allocator its blocks come from (for the reference counts)
/// @param from the first position to be written (>= 0)
/// @param to one past the last position to be written (an empty range needs nothing)
/// @return the number of blocks prepare_write() takes
int blocks_to_write(const KVSequence& seq, const BlockAllocator& alloc, int from, int to);

/// @brief Makes positions [@p from, @p to) of @p seq writable: every shared block among them
/// is replaced by a private copy (make_private()), then blocks are appended until the table
/// covers them. The valid length does not change.
/// @param seq the sequence
/// @param alloc the allocator its blocks come from; must have blocks_to_write() free blocks
/// @param from the first position to be written (>= 0)
/// @param to one past the last position to be written
/// @throws inferlab::Error when @p alloc runs out of blocks (check blocks_to_write() first).
void prepare_write(KVSequence& seq, BlockAllocator& alloc, int from, int to);

/// @brief Copy-on-write of logical block @p index: when another table also holds it, @p seq
/// gets a copy of its contents in a block of its own and drops its reference to the original.
/// @param seq the sequence
/// @param alloc the allocator its blocks come from
/// @param index a logical block of @p seq
/// @throws inferlab::Error when the block is shared and no block is free.
void make_private(KVSequence& seq, BlockAllocator& alloc, int index);

/// @brief Forgets every position >= @p length and gives back the blocks that hold none below
/// it: the table keeps ceil(length / B) blocks (a shared block only loses this reference).
/// @param seq the sequence
/// @param alloc the allocator its blocks come from
/// @param length the new length, in [0, seq.length()] (the caller checks it)
void truncate(KVSequence& seq, BlockAllocator& alloc, int length);

/// @brief Gives @p child (an empty table over the same pool) the first @p length positions of
/// @p parent by sharing their ceil(length / B) blocks (each reference count + 1): nothing is
/// copied until one of them writes into a shared block.
/// @param parent the sequence forked from
/// @param child the new sequence, holding no block
/// @param alloc the allocator the parent's blocks come from
/// @param length positions shared, in [0, parent.length()] (the caller checks it)
void fork(const KVSequence& parent, KVSequence& child, BlockAllocator& alloc, int length);

/// @brief Gives back every block of @p seq (a shared one only loses this reference) and
/// empties its table.
/// @param seq the sequence
/// @param alloc the allocator its blocks come from
void release(KVSequence& seq, BlockAllocator& alloc);

}  // namespace inferlab::paged
