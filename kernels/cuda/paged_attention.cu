// Ragged paged attention on the GPU: T tokens of several sequences, each attending to its own
// prefix, whose rows are found through the sequence's block table (PagedAttention).
//
// v1  one block per (token, head). Threads stride over positions 0..p; each looks up the
//     physical block of its position (one extra int read per position, the cost of paging),
//     computes the score into a global workspace row, then a block-wide max and sum give a
//     stable softmax, and each thread produces output dimensions by walking the weighted
//     values. Same structure as attention v1, with the table lookup added.
#include "common.cuh"
#include "inferlab/kernels/cuda/paged_attention_cuda.hpp"

namespace inferlab::kernels {

namespace {

constexpr int kThreads = 128;

__device__ inline std::size_t pool_row(const int* table, int s, int block_size) {
  return std::size_t(table[s / block_size]) * block_size + std::size_t(s % block_size);
}

__global__ void paged_attention_v1(float* out, const float* q, const float* key_pool,
                                   const float* value_pool, const int* block_tables,
                                   const int* table_offsets, const int* token_seq, const int* pos,
                                   int n_heads, int group, int n_kv_heads, int head_size,
                                   int block_size, int max_pos, float* workspace) {
  const int t = blockIdx.x / n_heads, h = blockIdx.x % n_heads;
  const std::size_t qd = std::size_t(n_heads) * head_size,
                    kv_dim = std::size_t(n_kv_heads) * head_size;
  float* o = out + t * qd + std::size_t(h) * head_size;
  const int p = pos[t];
  if (p < 0 || p > max_pos) {  // never read outside the workspace or the tables
    for (int i = threadIdx.x; i < head_size; i += blockDim.x) o[i] = NAN;
    return;
  }
  const int* table = block_tables + table_offsets[token_seq[t]];
  const float* qh = q + t * qd + std::size_t(h) * head_size;
  const std::size_t kv_off = std::size_t(h / group) * head_size;
  float* scores = workspace + std::size_t(blockIdx.x) * (max_pos + 1);
  const float scale = rsqrtf(float(head_size));

  float local_max = -INFINITY;
  for (int s = threadIdx.x; s <= p; s += blockDim.x) {
    const float* k = key_pool + pool_row(table, s, block_size) * kv_dim + kv_off;
    float dot = 0.0f;
    for (int i = 0; i < head_size; ++i) dot += qh[i] * k[i];
    scores[s] = dot * scale;
    local_max = fmaxf(local_max, scores[s]);
  }
  const float m = cuda::detail::block_max(local_max);
  float local_sum = 0.0f;
  for (int s = threadIdx.x; s <= p; s += blockDim.x) {
    const float e = expf(scores[s] - m);
    scores[s] = e;
    local_sum += e;
  }
  const float inv = 1.0f / cuda::detail::block_sum(local_sum);  // synchronises: scores visible
  for (int i = threadIdx.x; i < head_size; i += blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s <= p; ++s)
      acc += scores[s] * value_pool[pool_row(table, s, block_size) * kv_dim + kv_off + i];
    o[i] = acc * inv;
  }
}

}  // namespace

int paged_attention_cuda_versions() { return 1; }

std::size_t paged_attention_cuda_workspace_floats(int version, int T, int n_heads, int max_pos) {
  if (version != 1) cuda::detail::bad_version("paged_attention_cuda", version, 1);
  return std::size_t(T) * n_heads * (std::size_t(max_pos) + 1);
}

void paged_attention_cuda(int version, float* out, const float* q, const float* key_pool,
                          const float* value_pool, const int* block_tables,
                          const int* table_offsets, const int* token_seq, const int* pos, int T,
                          int n_heads, int n_kv_heads, int head_size, int block_size, int max_pos,
                          float* workspace, std::size_t workspace_floats, CUstream_st* stream) {
  using cuda::detail::require;
  const char* op = "paged_attention_cuda";
  require(T >= 1 && n_heads >= 1 && n_kv_heads >= 1 && head_size >= 1 && block_size >= 1 &&
              max_pos >= 0,
          op, "every dimension must be >= 1 (max_pos >= 0)");
  require(n_heads % n_kv_heads == 0, op, "n_kv_heads must divide n_heads");
  const std::size_t need = paged_attention_cuda_workspace_floats(version, T, n_heads, max_pos);
  require(workspace_floats >= need && workspace != nullptr, op, "workspace too small");
  paged_attention_v1<<<unsigned(T) * n_heads, kThreads, 0, stream>>>(
      out, q, key_pool, value_pool, block_tables, table_offsets, token_seq, pos, n_heads,
      n_heads / n_kv_heads, n_kv_heads, head_size, block_size, max_pos, workspace);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::kernels
