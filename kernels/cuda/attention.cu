// Decode attention over one sequence's KV cache on the GPU: for token t at position p and query
// head h, softmax(q . K[0..p]^T / sqrt(hs)) . V[0..p], reading KV head h / (Nh / Nkv).
//
// v1  one block per (token, head). The block stages q in shared memory, computes the p + 1
//     scores (threads stride over positions), takes a block-wide max and sum for a stable
//     softmax, then each thread produces output dimensions by walking the weighted values.
//     The scores of the whole prefix live in shared memory, so the longest context is bounded
//     by shared memory (about 12K positions at 48 KiB, more with the opt-in limit). Its real
//     problem is parallelism: a decode step (T = 1) launches only Nh blocks, e.g. 32 blocks on
//     a GPU with 132 SMs, and each block walks the whole context serially.
// v2  split-K, a.k.a. flash-decoding: the positions 0..p are cut into chunks of kChunk, and
//     each (token, head, chunk) is its own block. A block returns its chunk's maximum m, the sum
//     l of exp(score - m) and the unnormalised output o = sum exp(score - m) v. A second kernel
//     merges the chunks exactly: M = max m_c, L = sum l_c e^(m_c - M),
//     out = sum o_c e^(m_c - M) / L. More blocks (Nh * chunks) keep every SM busy at long
//     contexts, and shared memory no longer limits the context length.
#include <algorithm>

#include "common.cuh"
#include "inferlab/kernels/cuda/attention_cuda.hpp"

namespace inferlab::kernels {

namespace {

constexpr int kThreads = 128;
constexpr int kChunk = 256;  // positions per split in v2

struct Dims {
  int n_heads, group, kv_dim, head_size, max_pos;
  float scale;
};

// Stages the query head in shared memory; returns false (after writing NaNs) for a position
// outside [0, max_pos]. The branch is uniform across the block: it depends on blockIdx only.
__device__ inline bool valid_position(int p, const Dims& dm, float* out_h) {
  if (p >= 0 && p <= dm.max_pos) return true;
  for (int i = threadIdx.x; i < dm.head_size; i += blockDim.x) out_h[i] = NAN;
  return false;
}

// Scores of positions [s0, s1) into scores[0 .. s1 - s0), returns the block-wide maximum.
__device__ inline float compute_scores(float* scores, const float* qs, const float* k_cache, int s0,
                                       int s1, int kv_head, const Dims& dm) {
  float local_max = -INFINITY;
  for (int s = s0 + threadIdx.x; s < s1; s += blockDim.x) {
    const float* k = k_cache + std::size_t(s) * dm.kv_dim + std::size_t(kv_head) * dm.head_size;
    float dot = 0.0f;
    for (int i = 0; i < dm.head_size; ++i) dot += qs[i] * k[i];
    const float score = dot * dm.scale;
    scores[s - s0] = score;
    local_max = fmaxf(local_max, score);
  }
  return cuda::detail::block_max(local_max);  // also a barrier: scores are visible after it
}

// Replaces scores by exp(score - max) and returns their block-wide sum.
__device__ inline float exponentiate(float* scores, int count, float max) {
  float sum = 0.0f;
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const float e = expf(scores[j] - max);
    scores[j] = e;
    sum += e;
  }
  return cuda::detail::block_sum(sum);  // a barrier too
}

// dynamic shared memory: qs (head_size) then scores (max_pos + 1)
__global__ void attention_v1_kernel(float* out, const float* q, const float* k_cache,
                                    const float* v_cache, const int* pos, Dims dm) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* scores = smem + dm.head_size;
  const int t = blockIdx.x / dm.n_heads, h = blockIdx.x % dm.n_heads;
  const int kv_head = h / dm.group;
  const std::size_t row = (std::size_t(t) * dm.n_heads + h) * dm.head_size;
  float* out_h = out + row;
  const int p = pos[t];
  if (!valid_position(p, dm, out_h)) return;
  for (int i = threadIdx.x; i < dm.head_size; i += blockDim.x) qs[i] = q[row + i];
  __syncthreads();
  const float max = compute_scores(scores, qs, k_cache, 0, p + 1, kv_head, dm);
  const float inv_sum = 1.0f / exponentiate(scores, p + 1, max);
  for (int i = threadIdx.x; i < dm.head_size; i += blockDim.x) {
    const float* v = v_cache + std::size_t(kv_head) * dm.head_size + i;
    float acc = 0.0f;
    for (int s = 0; s <= p; ++s) acc += scores[s] * v[std::size_t(s) * dm.kv_dim];
    out_h[i] = acc * inv_sum;
  }
}

// Partial results of chunk c of row r = t * Nh + h (n_chunks chunks per row):
//   o_part[(r * n_chunks + c) * hs + i], m_part[r * n_chunks + c], l_part[r * n_chunks + c].
// dynamic shared memory: qs (head_size) then scores (kChunk)
__global__ void attention_v2_partial_kernel(float* o_part, float* m_part, float* l_part,
                                            const float* q, const float* k_cache,
                                            const float* v_cache, const int* pos, Dims dm,
                                            int n_chunks) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* scores = smem + dm.head_size;
  const int r = blockIdx.x, c = blockIdx.y;
  const int t = r / dm.n_heads, h = r % dm.n_heads;
  const int kv_head = h / dm.group;
  const int p = pos[t];
  // Invalid positions are reported by the merge kernel; chunks past p hold nothing.
  if (p < 0 || p > dm.max_pos) return;
  const int s0 = c * kChunk, s1 = min(s0 + kChunk, p + 1);
  if (s0 >= s1) return;  // the merge kernel reads only chunks 0 .. p / kChunk
  const std::size_t row = std::size_t(r) * dm.head_size;
  for (int i = threadIdx.x; i < dm.head_size; i += blockDim.x) qs[i] = q[row + i];
  __syncthreads();
  const float max = compute_scores(scores, qs, k_cache, s0, s1, kv_head, dm);
  const float sum = exponentiate(scores, s1 - s0, max);
  const std::size_t part = std::size_t(r) * n_chunks + c;
  for (int i = threadIdx.x; i < dm.head_size; i += blockDim.x) {
    const float* v = v_cache + std::size_t(kv_head) * dm.head_size + i;
    float acc = 0.0f;
    for (int s = s0; s < s1; ++s) acc += scores[s - s0] * v[std::size_t(s) * dm.kv_dim];
    o_part[part * dm.head_size + i] = acc;
  }
  if (threadIdx.x == 0) {
    m_part[part] = max;
    l_part[part] = sum;
  }
}

__global__ void attention_v2_merge_kernel(float* out, const float* o_part, const float* m_part,
                                          const float* l_part, const int* pos, Dims dm,
                                          int n_chunks) {
  const int r = blockIdx.x, t = r / dm.n_heads;
  float* out_h = out + std::size_t(r) * dm.head_size;
  const int p = pos[t];
  if (!valid_position(p, dm, out_h)) return;
  const int used = p / kChunk + 1;  // chunks that hold at least one position
  const std::size_t first = std::size_t(r) * n_chunks;
  float M = -INFINITY;
  for (int c = 0; c < used; ++c) M = fmaxf(M, m_part[first + c]);
  float L = 0.0f;
  for (int c = 0; c < used; ++c) L += l_part[first + c] * expf(m_part[first + c] - M);
  const float inv_L = 1.0f / L;
  for (int i = threadIdx.x; i < dm.head_size; i += blockDim.x) {
    float acc = 0.0f;
    for (int c = 0; c < used; ++c)
      acc += o_part[(first + c) * dm.head_size + i] * expf(m_part[first + c] - M);
    out_h[i] = acc * inv_L;
  }
}

int n_chunks_for(int max_pos) { return (max_pos + 1 + kChunk - 1) / kChunk; }

}  // namespace

int attention_cuda_versions() { return 2; }

std::size_t attention_cuda_workspace_floats(int version, int T, int n_heads, int head_size,
                                            int max_pos) {
  if (version != 2 || T <= 0 || n_heads <= 0 || head_size <= 0 || max_pos < 0) return 0;
  return std::size_t(T) * n_heads * n_chunks_for(max_pos) * (std::size_t(head_size) + 2);
}

void attention_cuda(int version, float* out, const float* q, const float* k_cache,
                    const float* v_cache, const int* pos, int T, int n_heads, int n_kv_heads,
                    int head_size, int max_pos, float* workspace, std::size_t workspace_floats,
                    CUstream_st* stream) {
  using cuda::detail::require;
  require(T >= 1 && n_heads >= 1 && n_kv_heads >= 1 && head_size >= 1 && max_pos >= 0,
          "attention_cuda", "T, n_heads, n_kv_heads, head_size must be >= 1 and max_pos >= 0");
  require(n_heads % n_kv_heads == 0, "attention_cuda", "n_heads must be a multiple of n_kv_heads");
  const long blocks = long(T) * n_heads;
  require(blocks <= 0x7fffffffL, "attention_cuda", "too many (token, head) pairs");
  const Dims dm{n_heads, n_heads / n_kv_heads,          n_kv_heads * head_size, head_size,
                max_pos, 1.0f / sqrtf(float(head_size))};
  switch (version) {
    case 1: {
      const std::size_t smem = (std::size_t(head_size) + max_pos + 1) * sizeof(float);
      if (smem > 48 * 1024) {
        int device = 0, optin = 0;
        INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
        INFERLAB_CUDA_CHECK(
            cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
        if (smem > std::size_t(optin)) {
          throw Error("attention_cuda v1: " + std::to_string(max_pos + 1) + " positions need " +
                      std::to_string(smem) + " bytes of shared memory, the device allows " +
                      std::to_string(optin) + "; use version 2");
        }
        INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(
            attention_v1_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      }
      attention_v1_kernel<<<unsigned(blocks), kThreads, smem, stream>>>(out, q, k_cache, v_cache,
                                                                        pos, dm);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    case 2: {
      const int n_chunks = n_chunks_for(max_pos);
      require(n_chunks <= 65535, "attention_cuda v2", "max_pos too large for the grid");
      const std::size_t need = attention_cuda_workspace_floats(2, T, n_heads, head_size, max_pos);
      require(workspace != nullptr && workspace_floats >= need, "attention_cuda v2",
              "workspace missing or smaller than attention_cuda_workspace_floats()");
      const std::size_t parts = std::size_t(blocks) * n_chunks;
      float* o_part = workspace;
      float* m_part = o_part + parts * head_size;
      float* l_part = m_part + parts;
      const std::size_t smem = (std::size_t(head_size) + kChunk) * sizeof(float);
      require(smem <= 48 * 1024, "attention_cuda v2", "head_size too large");
      const dim3 grid{unsigned(blocks), unsigned(n_chunks), 1u};
      attention_v2_partial_kernel<<<grid, kThreads, smem, stream>>>(
          o_part, m_part, l_part, q, k_cache, v_cache, pos, dm, n_chunks);
      INFERLAB_CUDA_CHECK_LAUNCH();
      attention_v2_merge_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(
          out, o_part, m_part, l_part, pos, dm, n_chunks);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    default:
      cuda::detail::bad_version("attention_cuda", version, attention_cuda_versions());
  }
}

}  // namespace inferlab::kernels
