#pragma once
/// @file attention.hpp
/// @brief Causal grouped-query attention of T new tokens over a KV cache: the reference, the
/// fast CPU path over the stored KV rows, the tree-masked (listed rows) version, and the paged
/// reference of a ragged batch.
///
/// Token t sits at position pos[t] and attends to cache positions 0..pos[t] (inclusive; its own
/// key and value are already written). Query head h reads KV head h / (Nh / Nkv).
///
/// | reference, fast CPU version | the keys and values it reads | CUDA twin |
/// |---|---|---|
/// | attention_ref, attention_cpu | float rows, row p = position p | attention_cuda |
/// | attention_kv_ref, attention_kv_cpu | a KVRowsView (any storage, contiguous or paged) | |
/// | attention_kv_rows_ref, attention_kv_rows_cpu | listed rows of a KVRowsView (tree mask) | |
/// | paged_attention_ref | a ragged batch in a shared pool of blocks | paged_attention_cuda |
///
/// Every fast CPU version runs one loop (kernels/src/attend.hpp), so a token's output has the
/// same bits alone or in a batch, in a contiguous or a paged cache, causal or listed. The CUDA
/// versions take the same arguments in the same order (attention_cuda.hpp,
/// paged_attention_cuda.hpp). The storage the KV views read is kv_quant.hpp.

#include "inferlab/kernels/kv_quant.hpp"

namespace inferlab::kernels {

/// @brief Reference over float rows (plain loops; the specification of attention_cuda).
/// @param out (T, Nh*hs) attention output
/// @param q (T, Nh*hs) queries (RoPE applied)
/// @param k_cache (S, Nkv*hs) keys of this layer, row p = position p
/// @param v_cache (S, Nkv*hs) values of this layer
/// @param pos (T) position of each query token
/// @param T number of query tokens in this call
/// @param n_heads Nh, query heads
/// @param n_kv_heads Nkv, key/value heads (divides Nh; Nh / Nkv query heads share one)
/// @param head_size hs, floats per head
/// @note Cost per token: 4*(pos+1)*Nh*hs FLOPs; reads (pos+1)*2*Nkv*hs cached floats.
void attention_ref(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size);
/// @brief Fast CPU version of attention_ref (OpenMP over (token, head) pairs); the loop of
/// attention_kv_cpu on float rows.
void attention_cpu(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size);

/// @brief Reference over stored rows: gathers positions 0..max(pos) of both views (through
/// their block tables) into contiguous float rows and runs attention_ref on them (the
/// specification: the same result as attention on the rounded values, wherever the rows are
/// stored).
/// @param out (T, Nh*hs) attention output
/// @param q (T, Nh*hs) queries (RoPE applied)
/// @param k keys of this layer (any storage type, contiguous or through a block table)
/// @param v values of this layer
/// @param pos (T) position of each query token
/// @param T number of query tokens
/// @param n_heads Nh
/// @param n_kv_heads Nkv
/// @param head_size hs
/// @throws inferlab::Error for a storage type the KV storage does not implement.
void attention_kv_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size);
/// @brief Fast CPU version of attention_kv_ref, the one the forward pass runs: dequantizes
/// inside the dot products (the cache is read once, at its stored width) and follows the
/// block table row by row. With DType::f32 and no block table it is exactly attention_cpu;
/// with a block table it gives the same bits. Views with different block tables go to
/// attention_kv_ref.
/// @throws inferlab::Error for a storage type the KV storage does not implement.
/// @note Bytes read per token: (pos+1) * 2 * Nkv*hs * kv_element_bytes (+ scales for int8).
void attention_kv_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size);

/// @brief Attention over listed rows (tree attention, chapter 07): query token t attends to
/// the cache rows rows[begin[t]] .. rows[begin[t+1] - 1] only, which must be ascending. The
/// reference: dequantizes every row it needs and runs attention_ref's loops over the list.
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
/// @throws inferlab::Error for a storage type the KV storage does not implement.
void attention_kv_rows_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size);
/// @brief Fast CPU version of attention_kv_rows_ref. It runs the same loop as
/// attention_kv_cpu, so the list 0..p gives exactly attention_kv_cpu's bits at position p.
/// @throws inferlab::Error for a storage type the KV storage does not implement.
/// @note Cost per token: 4 * rows * Nh * hs FLOPs; reads rows * 2 * KV cached elements.
void attention_kv_rows_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size);

/// @brief Paged attention over a ragged batch (PagedAttention, chapter 05): the reference
/// (plain loops over float pools; the specification of paged_attention_cuda).
///
/// T query tokens come from several sequences. Token t belongs to sequence token_seq[t], sits
/// at position pos[t] and attends to that sequence's positions 0..pos[t]. Position s of
/// sequence e is row table[s / B] * B + s % B of the pool, where table = block_tables +
/// table_offsets[e] and B = block_size. Each token's rows are gathered through its table and
/// go through attention_ref.
/// @param out (T, Nh*hs) attention output
/// @param q (T, Nh*hs) queries (RoPE applied)
/// @param key_pool (rows, Nkv*hs) keys of this layer, rows = blocks * B
/// @param value_pool (rows, Nkv*hs) values of this layer
/// @param block_tables every sequence's block table, back to back
/// @param table_offsets (sequences) where sequence e's table starts in block_tables
/// @param token_seq (T) the sequence of each token
/// @param pos (T) the position of each token in its sequence
/// @param T tokens
/// @param n_heads Nh
/// @param n_kv_heads Nkv (divides Nh)
/// @param head_size hs
/// @param block_size B, positions per block
/// @note Cost per token: 4*(pos+1)*Nh*hs FLOPs; reads (pos+1)*2*Nkv*hs floats plus one table
/// entry per block of the prefix.
void paged_attention_ref(float* out, const float* q, const float* key_pool, const float* value_pool,
                         const int* block_tables, const int* table_offsets, const int* token_seq,
                         const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
                         int block_size);

}  // namespace inferlab::kernels
