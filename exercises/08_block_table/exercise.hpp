#pragma once
/// @file exercises/08_block_table/exercise.hpp
/// @brief Exercise 08: a block table with reference counts and copy-on-write (chapter 05).
///
/// The model of the exercise: a pool of fixed-size blocks, each holding `block_size` slots. A
/// slot stores one value (standing for the key and value of one position: here simply the
/// token id, so that what a sequence reads back can be checked). A sequence is a block table
/// (logical block i -> physical block) and a length. Blocks are reference counted: a block
/// holds as many references as tables list it, and is free when it holds none.

#include <vector>

namespace inferlab::ex08 {

/// @brief The physical blocks and their bookkeeping.
struct Pool {
  int block_size = 0;                  ///< slots per block
  std::vector<std::vector<int>> data;  ///< (num_blocks, block_size) stored values
  std::vector<int> ref;                ///< (num_blocks) reference count of each block
  std::vector<int> free_list;          ///< ids of the blocks with reference count 0
  int copies = 0;                      ///< blocks copied by copy-on-write so far
};

/// @brief One sequence: its block table and how many positions it holds.
struct Table {
  std::vector<int> blocks;  ///< logical block i is physical block blocks[i]
  int length = 0;           ///< positions 0..length-1 are valid
};

/// @brief A pool of @p num_blocks free blocks of @p block_size slots (zeros).
/// @throws inferlab::Error if either is < 1.
Pool make_pool(int num_blocks, int block_size);

/// @brief Appends @p value at position table.length: into the last block if it has room (after
/// copying it first if another table shares it: copy-on-write), else into a new block.
/// @return false (nothing changed) when a block is needed and none is free.
bool append(Pool& pool, Table& table, int value);

/// @brief A new table sharing every block of @p table (each reference count + 1), same length.
Table fork(Pool& pool, const Table& table);

/// @brief Drops every block of @p table (reference counts - 1; a block at 0 is free again) and
/// empties the table.
void release(Pool& pool, Table& table);

/// @brief The values at positions 0..length-1, read through the block table.
std::vector<int> read(const Pool& pool, const Table& table);

}  // namespace inferlab::ex08
