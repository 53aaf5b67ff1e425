// Exercise 08's test: random operation sequences on a small pool, every invariant checked after
// every operation, and every table's contents compared with a plain vector kept beside it.
#include <map>
#include <random>
#include <set>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

using namespace inferlab::ex08;

namespace {

void check_invariants(const Pool& pool, const std::vector<Table>& tables, int num_blocks,
                      int block_size) {
  // The pool's shape first: an unfinished make_pool must fail here, not divide by zero or
  // index past the end below.
  REQUIRE(pool.block_size == block_size);
  REQUIRE(pool.ref.size() == std::size_t(num_blocks));
  std::map<int, int> holders;
  for (const Table& t : tables) {
    // A table holds exactly the blocks its length needs.
    REQUIRE(int(t.blocks.size()) == (t.length + pool.block_size - 1) / pool.block_size);
    for (int id : t.blocks) ++holders[id];
  }
  std::set<int> free_ids(pool.free_list.begin(), pool.free_list.end());
  REQUIRE(free_ids.size() == pool.free_list.size());  // nobody freed twice
  for (int id = 0; id < num_blocks; ++id) {
    INFO("block " << id);
    REQUIRE(pool.ref[std::size_t(id)] == holders[id]);         // counts exact
    REQUIRE((free_ids.count(id) == 1) == (holders[id] == 0));  // free iff unheld: no leak
  }
}

}  // namespace

TEST_CASE("exercise 08: a fresh pool and the simplest append", "[exercise]") {
  Pool pool = make_pool(4, 2);
  REQUIRE(pool.free_list.size() == 4);
  Table t;
  REQUIRE(append(pool, t, 10));
  REQUIRE(append(pool, t, 11));
  REQUIRE(append(pool, t, 12));
  CHECK(t.blocks.size() == 2);
  CHECK(read(pool, t) == std::vector<int>{10, 11, 12});
  CHECK_THROWS_AS(make_pool(0, 2), inferlab::Error);
  CHECK_THROWS_AS(make_pool(2, 0), inferlab::Error);
}

TEST_CASE("exercise 08: fork shares, copy-on-write copies only the block written", "[exercise]") {
  Pool pool = make_pool(8, 4);
  Table a;
  for (int v = 0; v < 6; ++v) REQUIRE(append(pool, a, v));  // blocks: [0 1 2 3] [4 5 . .]
  Table b = fork(pool, a);
  CHECK(pool.free_list.size() == 6);  // nothing copied by the fork itself
  const std::vector<int> shared_last = pool.data[std::size_t(a.blocks[1])];
  REQUIRE(append(pool, b, 100));
  CHECK(pool.copies == 1);
  CHECK(pool.data[std::size_t(a.blocks[1])] == shared_last);  // the shared block untouched
  CHECK(a.blocks[0] == b.blocks[0]);  // the full first block is still shared
  CHECK(a.blocks[1] != b.blocks[1]);
  REQUIRE(append(pool, a, 200));  // a is now the only holder of its block: no copy
  CHECK(pool.copies == 1);
  CHECK(read(pool, a) == std::vector<int>{0, 1, 2, 3, 4, 5, 200});
  CHECK(read(pool, b) == std::vector<int>{0, 1, 2, 3, 4, 5, 100});
  release(pool, a);
  release(pool, b);
  CHECK(pool.free_list.size() == 8);
}

TEST_CASE("exercise 08: random operations keep every invariant", "[exercise]") {
  for (int block_size : {1, 3, 4}) {
    const int num_blocks = 20;
    Pool pool = make_pool(num_blocks, block_size);
    std::vector<Table> tables;
    std::vector<std::vector<int>> expected;  // what each table must read back
    std::mt19937 rng(1234 + block_size);
    int appended = 0, forked = 0;
    for (int op = 0; op < 4000; ++op) {
      // New tables 10%, appends 50%, forks 20%, releases 20% (and always when there are many
      // tables), so the pool keeps filling up and emptying.
      int what = int(rng() % 10);
      if (tables.size() > 8) what = 9;
      if (tables.empty() || what == 0) {
        tables.emplace_back();
        expected.emplace_back();
      } else if (what <= 5) {
        const std::size_t i = rng() % tables.size();
        const int value = int(rng() % 1000);
        const std::size_t free_before = pool.free_list.size();
        const Table before = tables[i];
        if (append(pool, tables[i], value)) {
          expected[i].push_back(value);
          ++appended;
        } else {
          // Refused only when a block was needed and none was free; then nothing changed.
          CHECK(free_before == 0);
          CHECK(tables[i].blocks == before.blocks);
          CHECK(tables[i].length == before.length);
        }
      } else if (what <= 7) {
        const std::size_t i = rng() % tables.size();
        tables.push_back(fork(pool, tables[i]));
        expected.push_back(expected[i]);
        ++forked;
      } else {
        const std::size_t i = rng() % tables.size();
        release(pool, tables[i]);
        tables.erase(tables.begin() + std::ptrdiff_t(i));
        expected.erase(expected.begin() + std::ptrdiff_t(i));
      }
      check_invariants(pool, tables, num_blocks, block_size);
      for (std::size_t i = 0; i < tables.size(); ++i) REQUIRE(read(pool, tables[i]) == expected[i]);
    }
    CHECK(appended > 500);
    CHECK(forked > 200);
    if (block_size > 1) CHECK(pool.copies > 0);  // blocks of one slot are never written twice
  }
}
