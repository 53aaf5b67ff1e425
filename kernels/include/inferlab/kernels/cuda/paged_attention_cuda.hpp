#pragma once
/// @file paged_attention_cuda.hpp
/// @brief CUDA version of ragged paged attention (reference and layout: paged_attention_ref in
/// inferlab/kernels/attention.hpp).

#include <cstddef>

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one block per (token, head); threads stride over the prefix's positions,
/// each following the block table to its row; the scores go to a global workspace.
constexpr int kPagedAttentionBestVersion = 1;
/// @brief Number of versions (valid versions are 1..paged_attention_cuda_versions()).
int paged_attention_cuda_versions();

/// @brief Scratch floats paged_attention_cuda needs: T * Nh * (max_pos + 1).
std::size_t paged_attention_cuda_workspace_floats(int version, int T, int n_heads, int max_pos);

/// @brief paged_attention_ref on the device; same arguments in the same order, plus a version,
/// an upper bound max_pos on every pos[t] (a token beyond it gets NaN outputs), a workspace
/// and a stream. Every pointer is device memory.
/// @throws inferlab::Error on bad dimensions, a bad version, a too small workspace, or when the
///         launch fails.
void paged_attention_cuda(int version, float* out, const float* q, const float* key_pool,
                          const float* value_pool, const int* block_tables,
                          const int* table_offsets, const int* token_seq, const int* pos, int T,
                          int n_heads, int n_kv_heads, int head_size, int block_size, int max_pos,
                          float* workspace, std::size_t workspace_floats,
                          CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
