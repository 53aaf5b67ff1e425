#pragma once
/// @file kv_quant.hpp
/// @brief KV cache storage (the DType values f32, f16, int8 with per-(token, head) scales), the
/// kernels that write rows into it, and attention that reads them back.
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

/// @brief Reference: gathers positions 0..max(pos) of both views (through their block tables)
/// into contiguous float rows and runs attention_ref on them (the specification: the same
/// result as attention on the rounded values, wherever the rows are stored).
void attention_kv_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size);

/// @brief Fast CPU version: dequantizes inside the dot products (the cache is read once, at
/// its stored width) and follows the block table row by row. With DType::f32 and no block
/// table it is exactly attention_cpu; with a block table it gives the same bits.
/// @note Bytes read per token: (pos+1) * 2 * Nkv*hs * kv_element_bytes (+ scales for int8).
void attention_kv_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size);

/// @brief Attention over listed rows (tree attention, chapter 07): query token t attends to
/// the cache rows rows[begin[t]] .. rows[begin[t+1] - 1] only, which must be ascending. The
/// reference: dequantizes every row it needs and follows attention_ref's loops.
/// @param out (T, Nh*hs) attention output
/// @param q (T, Nh*hs) queries (RoPE applied)
/// @param k keys of this layer (any storage type)
/// @param v values of this layer (any storage type)
/// @param begin (T + 1) offsets into @p rows; token t's list has begin[t+1] - begin[t] >= 1 rows
/// @param rows the concatenated row lists
/// @param T number of query tokens
/// @param n_heads Nh
/// @param n_kv_heads Nkv
/// @param head_size hs
void attention_kv_rows_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size);
/// @brief Fast CPU version of attention_kv_rows_ref. It runs the same loop as
/// attention_kv_cpu, so the list 0..p gives exactly attention_kv_cpu's bits at position p.
/// @note Cost per token: 4 * rows * Nh * hs FLOPs; reads rows * 2 * KV cached elements.
void attention_kv_rows_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size);

}  // namespace inferlab::kernels
