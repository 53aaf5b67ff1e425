// Exercise 08, a checked answer: a block table with reference counts and copy-on-write.
#include <fmt/format.h>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab::ex08 {

Pool make_pool(int num_blocks, int block_size) {
  if (num_blocks < 1 || block_size < 1)
    throw Error(fmt::format("pool of {} blocks x {} slots", num_blocks, block_size));
  Pool p;
  p.block_size = block_size;
  p.data.assign(std::size_t(num_blocks), std::vector<int>(std::size_t(block_size), 0));
  p.ref.assign(std::size_t(num_blocks), 0);
  for (int id = num_blocks - 1; id >= 0; --id) p.free_list.push_back(id);
  return p;
}

namespace {
int take(Pool& pool) {
  const int id = pool.free_list.back();
  pool.free_list.pop_back();
  pool.ref[std::size_t(id)] = 1;
  return id;
}
void drop(Pool& pool, int id) {
  if (--pool.ref[std::size_t(id)] == 0) pool.free_list.push_back(id);
}
}  // namespace

bool append(Pool& pool, Table& table, int value) {
  const int b = table.length / pool.block_size, slot = table.length % pool.block_size;
  if (b == static_cast<int>(table.blocks.size())) {  // the last block is full (or none yet)
    if (pool.free_list.empty()) return false;
    table.blocks.push_back(take(pool));
  } else if (pool.ref[std::size_t(table.blocks[std::size_t(b)])] > 1) {
    // Shared: others still read this block as it is. Write into a private copy.
    if (pool.free_list.empty()) return false;
    const int shared = table.blocks[std::size_t(b)];
    const int copy = take(pool);
    pool.data[std::size_t(copy)] = pool.data[std::size_t(shared)];
    ++pool.copies;
    drop(pool, shared);
    table.blocks[std::size_t(b)] = copy;
  }
  pool.data[std::size_t(table.blocks[std::size_t(b)])][std::size_t(slot)] = value;
  ++table.length;
  return true;
}

Table fork(Pool& pool, const Table& table) {
  for (int id : table.blocks) ++pool.ref[std::size_t(id)];
  return table;
}

void release(Pool& pool, Table& table) {
  for (int id : table.blocks) drop(pool, id);
  table = {};
}

std::vector<int> read(const Pool& pool, const Table& table) {
  std::vector<int> out;
  for (int p = 0; p < table.length; ++p)
    out.push_back(pool.data[std::size_t(table.blocks[std::size_t(p / pool.block_size)])]
                           [std::size_t(p % pool.block_size)]);
  return out;
}

}  // namespace inferlab::ex08
