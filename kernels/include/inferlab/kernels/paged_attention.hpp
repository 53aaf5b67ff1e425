#pragma once
/// @file paged_attention.hpp
/// @brief Attention for a ragged batch whose KV rows live in a shared pool of blocks
/// (PagedAttention, chapter 05): the CPU reference twin of the CUDA kernel.
///
/// T query tokens come from several sequences. Token t belongs to sequence token_seq[t], sits
/// at position pos[t] and attends to that sequence's positions 0..pos[t]. Position s of
/// sequence e is row table[s / B] * B + s % B of the pool, where table = block_tables +
/// table_offsets[e] and B = block_size. Query head h reads KV head h / (Nh / Nkv).

namespace inferlab::kernels {

/// @brief Reference (plain loops over float pools; the specification of paged_attention_cuda).
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
