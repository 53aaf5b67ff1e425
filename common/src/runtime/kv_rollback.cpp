// Undoing a speculative round in contiguous and paged KV storage.
#include "inferlab/runtime/kv_rollback.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/paged_sequence.hpp"

namespace inferlab {

namespace {

// keep_rows' contract, shared by both storages.
void check_kept_rows(int base, int length, std::span<const int> rows) {
  if (base < 0 || base > length) {
    throw Error(fmt::format("KV rollback: base {} outside [0, {}]", base, length));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int prev = i == 0 ? base - 1 : rows[i - 1];
    if (rows[i] <= prev || rows[i] >= length) {
      throw Error(fmt::format("KV rollback: kept row {} must be ascending and in [{}, {})", rows[i],
                              base, length));
    }
  }
}

void check_truncate(int from, int to) {
  if (to < 0 || to > from) {
    throw Error(fmt::format("KV rollback: cannot truncate {} positions to {}", from, to));
  }
}

}  // namespace

void ContiguousKVRollback::truncate(int length) {
  check_truncate(cache_->length(), length);
  cache_->set_length(length);
}

void ContiguousKVRollback::keep_rows(int base, std::span<const int> rows) {
  check_kept_rows(base, cache_->length(), rows);
  // Ascending rows, each >= its destination, so copying in order never overwrites a row that
  // is still to be read. A row already in place (a chain's accepted prefix) is not copied.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int to = base + static_cast<int>(i);
    if (rows[i] != to) cache_->copy_position(rows[i], to);
  }
  cache_->set_length(base + static_cast<int>(rows.size()));
}

PagedKVRollback::PagedKVRollback(KVSequence& sequence, BlockAllocator& allocator)
    : seq_(&sequence), alloc_(&allocator) {
  if (sequence.pool().num_blocks() != allocator.num_blocks()) {
    throw Error(fmt::format("paged KV rollback: the pool has {} blocks, the allocator {}",
                            sequence.pool().num_blocks(), allocator.num_blocks()));
  }
}

void PagedKVRollback::truncate(int length) {
  check_truncate(seq_->length(), length);
  paged::truncate(*seq_, *alloc_, length);
}

void PagedKVRollback::keep_rows(int base, std::span<const int> rows) {
  check_kept_rows(base, seq_->length(), rows);
  const int B = seq_->pool().block_size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int to = base + static_cast<int>(i);
    if (rows[i] == to) continue;  // already in place: nothing is written
    paged::make_private(*seq_, *alloc_, to / B);
    seq_->copy_position(rows[i], to);
  }
  truncate(base + static_cast<int>(rows.size()));
}

int PagedKVRollback::blocks_needed(int length) const {
  return paged::blocks_to_write(*seq_, *alloc_, seq_->length(), length);
}

void PagedKVRollback::reserve(int length) {
  const int need = blocks_needed(length);
  if (need > alloc_->num_free()) {
    throw Error(fmt::format("paged KV: {} positions need {} more blocks of {}, {} are free", length,
                            need, seq_->pool().block_size(), alloc_->num_free()));
  }
  paged::prepare_write(*seq_, *alloc_, seq_->length(), length);
}

}  // namespace inferlab
