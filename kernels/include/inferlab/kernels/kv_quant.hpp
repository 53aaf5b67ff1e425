#pragma once
/// @file kv_quant.hpp
/// @brief KV cache storage: the DType values f32, f16, int8 (with per-(token, head) scales),
/// the kernels that write rows into it and read them back, and the view attention reads it
/// through (attention.hpp).
///
/// Storing the cache in fewer bits per value shrinks the bytes every decode step must read (the
/// cache is read in full at every step) and the memory each sequence holds, at a small cost in
/// accuracy that chapter 02 measures.

#include <cstddef>
#include <cstdint>

#include "inferlab/kernels/dtype.hpp"

namespace inferlab::kernels {

/// @brief Bytes of one stored element of a KV storage type (scales not included): 4, 2 or 1.
/// @throws inferlab::Error for a type the KV storage does not implement (kv_storage_supported()).
std::size_t kv_element_bytes(DType type);

/// @brief A read-only view of one layer's cached keys (or values) of one sequence.
///
/// The rows live in a storage of `rows` rows. Without a block table, position p is row p (a
/// contiguous cache). With one (PagedAttention, chapter 05), position p is in logical block
/// p / block_size, which is physical block block_table[p / block_size], at offset
/// p % block_size: row = block_table[p / block_size] * block_size + p % block_size. Attention
/// visits positions in the same order either way, so both give the same bits.
struct KVRowsView {
  DType type = DType::f32;           ///< storage type of `data`
  const void* data = nullptr;        ///< (rows, Nkv*hs) elements of `type`
  const float* scales = nullptr;     ///< (rows, Nkv) for int8, else unused
  const int* block_table = nullptr;  ///< (logical blocks) physical block ids; null: row = position
  int block_size = 0;                ///< positions per block (used with block_table)
  /// @brief The storage row that holds position @p pos.
  std::size_t row(int pos) const {
    if (block_table == nullptr) return std::size_t(pos);
    return std::size_t(block_table[pos / block_size]) * block_size + std::size_t(pos % block_size);
  }
};

/// @brief Writes @p rows rows of float values @p x (rows, Nkv*hs) into storage @p data (and
/// @p scales for int8: one per (row, head) = max|x| / 127 over the head's hs values).
/// @throws inferlab::Error for a type the KV storage does not implement.
void kv_store_rows(DType type, void* data, float* scales, const float* x, int rows, int n_kv_heads,
                   int head_size);

/// @brief Reads @p rows rows back as floats (out: (rows, Nkv*hs)). The inverse of
/// kv_store_rows up to the type's rounding.
/// @throws inferlab::Error for a type the KV storage does not implement.
void kv_load_rows(DType type, float* out, const void* data, const float* scales, int rows,
                  int n_kv_heads, int head_size);

}  // namespace inferlab::kernels
