// A paged sequence's block table: growth, copy-on-write, truncation, fork, release.
#include "inferlab/runtime/paged_sequence.hpp"

#include <algorithm>
#include <vector>

#include "inferlab/base/units.hpp"

namespace inferlab::paged {

namespace {
int table_size(const KVSequence& seq) { return static_cast<int>(seq.blocks().size()); }
}  // namespace

int blocks_to_write(const KVSequence& seq, const BlockAllocator& alloc, int from, int to) {
  if (to <= from) return 0;
  const int B = seq.pool().block_size(), have = table_size(seq);
  const int first = from / B, last = (to - 1) / B;
  int need = std::max(0, last + 1 - have);
  // Writing into a block another table also holds needs a private copy first.
  for (int b = first; b <= std::min(last, have - 1); ++b)
    if (alloc.ref_count(seq.blocks()[std::size_t(b)]) > 1) ++need;
  return need;
}

void make_private(KVSequence& seq, BlockAllocator& alloc, int index) {
  const int shared = seq.blocks()[std::size_t(index)];
  if (alloc.ref_count(shared) == 1) return;
  // Another table reads this block: write into a copy, and leave the original to the others.
  const int copy = alloc.allocate();
  seq.pool().copy_block(shared, copy);
  alloc.release(shared);
  seq.replace_block(index, copy);
}

void prepare_write(KVSequence& seq, BlockAllocator& alloc, int from, int to) {
  if (to <= from) return;
  const int B = seq.pool().block_size();
  const int first = from / B, last = (to - 1) / B;
  for (int b = first; b <= std::min(last, table_size(seq) - 1); ++b) make_private(seq, alloc, b);
  while (table_size(seq) <= last) seq.append_block(alloc.allocate());
}

void truncate(KVSequence& seq, BlockAllocator& alloc, int length) {
  const int keep = ceil_div(length, seq.pool().block_size());
  const std::vector<int> table = seq.blocks();
  // KVSequence has no "pop": rebuild the table from the blocks that stay.
  seq.release_blocks();
  for (int b = 0; b < static_cast<int>(table.size()); ++b) {
    if (b < keep) {
      seq.append_block(table[std::size_t(b)]);
    } else {
      alloc.release(table[std::size_t(b)]);
    }
  }
  seq.set_length(length);
}

void fork(const KVSequence& parent, KVSequence& child, BlockAllocator& alloc, int length) {
  const int blocks = ceil_div(length, parent.pool().block_size());
  for (int i = 0; i < blocks; ++i) {
    const int id = parent.blocks()[std::size_t(i)];
    alloc.retain(id);
    child.append_block(id);
  }
  child.set_length(length);
}

void release(KVSequence& seq, BlockAllocator& alloc) {
  for (int id : seq.blocks()) alloc.release(id);
  seq.release_blocks();
}

}  // namespace inferlab::paged
