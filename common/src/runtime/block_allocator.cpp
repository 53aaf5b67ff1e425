// Free list and reference counts of PagedAttention's physical blocks.
#include "inferlab/runtime/block_allocator.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

BlockAllocator::BlockAllocator(int num_blocks) {
  if (num_blocks < 1)
    throw Error(fmt::format("block allocator: {} blocks (must be >= 1)", num_blocks));
  ref_.assign(std::size_t(num_blocks), 0);
  free_.reserve(std::size_t(num_blocks));
  // Pushed in reverse so that a fresh allocator hands out 0, 1, 2, ... (easier to read).
  for (int id = num_blocks - 1; id >= 0; --id) free_.push_back(id);
}

int BlockAllocator::allocate() {
  if (free_.empty()) throw Error("block allocator: no free block");
  const int id = free_.back();
  free_.pop_back();
  ref_[std::size_t(id)] = 1;
  ++version_;
  return id;
}

void BlockAllocator::retain(int id) {
  if (ref_count(id) < 1) throw Error(fmt::format("block allocator: retain of free block {}", id));
  ++ref_[std::size_t(id)];
  ++version_;
}

void BlockAllocator::release(int id) {
  if (ref_count(id) < 1) throw Error(fmt::format("block allocator: block {} freed twice", id));
  if (--ref_[std::size_t(id)] == 0) free_.push_back(id);
  ++version_;
}

int BlockAllocator::ref_count(int id) const {
  if (id < 0 || id >= num_blocks())
    throw Error(fmt::format("block allocator: block {} outside [0, {})", id, num_blocks()));
  return ref_[std::size_t(id)];
}

}  // namespace inferlab
