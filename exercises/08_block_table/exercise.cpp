// Exercise 08, the learner's file: a block table with reference counts and copy-on-write.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex08_block_table_test
//   ./build-exercises/bin/ex08_block_table_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex08 {

Pool make_pool(int num_blocks, int block_size) {
  // TODO(exercise): validate the sizes; every block starts free.
  (void)num_blocks;
  (void)block_size;
  return {};
}

bool append(Pool& pool, Table& table, int value) {
  // TODO(exercise): where does position table.length live? What must happen before writing
  // into a block that another table can still read?
  (void)pool;
  (void)table;
  (void)value;
  return false;
}

Table fork(Pool& pool, const Table& table) {
  // TODO(exercise): share, do not copy.
  (void)pool;
  return table;
}

void release(Pool& pool, Table& table) {
  // TODO(exercise): give back what this table held.
  (void)pool;
  (void)table;
}

std::vector<int> read(const Pool& pool, const Table& table) {
  // TODO(exercise): follow the table.
  (void)pool;
  (void)table;
  return {};
}

}  // namespace inferlab::ex08
