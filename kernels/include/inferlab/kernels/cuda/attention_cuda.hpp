#pragma once
/// @file attention_cuda.hpp
/// @brief CUDA versions of decode attention over one sequence's KV cache (reference and layout:
/// inferlab/kernels/attention.hpp).

#include <cstddef>

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one block per (token, head), scores of the whole prefix in shared memory;
/// 2 split-K / flash-decoding: each (token, head) is split into chunks of positions processed
/// by separate blocks, then a second kernel merges the partial softmaxes.
constexpr int kAttentionBestVersion = 2;
/// @brief Number of versions (valid versions are 1..attention_cuda_versions()).
int attention_cuda_versions();

/// @brief Scratch floats attention_cuda needs for @p version (0 for version 1; for version 2,
/// T * Nh * n_chunks * (hs + 2) with n_chunks = ceil((max_pos + 1) / 256)).
std::size_t attention_cuda_workspace_floats(int version, int T, int n_heads, int head_size,
                                            int max_pos);

/// @brief Causal GQA attention on the device; same argument order as attention_ref, plus
/// a version, a workspace and a stream. Every pointer is device memory.
/// @param version 1..attention_cuda_versions()
/// @param out (T, Nh*hs) attention output, written
/// @param q (T, Nh*hs) queries (RoPE applied)
/// @param k_cache (S, Nkv*hs) keys of this layer, row p = position p (rows 0..pos[t] written)
/// @param v_cache (S, Nkv*hs) values of this layer
/// @param pos (T) position of each query token
/// @param T number of query tokens in this call
/// @param n_heads Nh, query heads
/// @param n_kv_heads Nkv, key/value heads (divides Nh)
/// @param head_size hs, floats per head
/// @param max_pos an upper bound on every pos[t] (the host knows it: start_pos + T - 1). A
///        token with pos outside [0, max_pos] gets NaN outputs instead of reading out of bounds.
/// @param workspace device scratch of at least attention_cuda_workspace_floats() floats (may be
///        nullptr when that is 0)
/// @param workspace_floats its size, checked
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @throws inferlab::Error on bad dimensions, a bad version or a too small workspace, when
///         version 1 would need more shared memory than the device has (long contexts: use
///         version 2), or when the launch fails.
/// @note Cost per token: 4*(pos+1)*Nh*hs FLOPs; reads (pos+1)*2*Nkv*hs cached floats.
void attention_cuda(int version, float* out, const float* q, const float* k_cache,
                    const float* v_cache, const int* pos, int T, int n_heads, int n_kv_heads,
                    int head_size, int max_pos, float* workspace, std::size_t workspace_floats,
                    CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
