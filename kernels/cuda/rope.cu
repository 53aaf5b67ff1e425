// Rotary position embedding on the GPU (llama2.c convention: adjacent pairs (2i, 2i+1) of each
// head rotated by pos * theta^(-2i/hs)).
//
// v1  one thread per rotated pair, the query pairs and the key pairs of all T tokens in one
//     launch. Each thread computes its own frequency and cos/sin (powf, cosf, sinf: the
//     accurate versions, not the __fast intrinsics, since angles reach thousands of radians).
//     The op is tiny next to the matmuls around it, so there is no second version. With a
//     table of inverse frequencies (RoPE scaling rules), each thread reads its pair's instead.
#include "common.cuh"
#include "inferlab/kernels/cuda/rope_cuda.hpp"

namespace inferlab::kernels {

namespace {

__global__ void rope_v1_kernel(float* q, float* k, const int* pos, int T, int q_dim, int k_dim,
                               int head_size, float theta, const float* inv_freq) {
  const int q_pairs = q_dim / 2, pairs = (q_dim + k_dim) / 2;
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(T) * pairs) return;
  const int t = int(idx / pairs), p = int(idx % pairs);
  float* v = p < q_pairs ? q + std::size_t(t) * q_dim + 2 * p
                         : k + std::size_t(t) * k_dim + 2 * (p - q_pairs);
  const int j = (p < q_pairs ? 2 * p : 2 * (p - q_pairs)) % head_size;  // offset inside the head
  const float freq =
      inv_freq != nullptr ? inv_freq[j / 2] : 1.0f / powf(theta, float(j) / float(head_size));
  const float angle = float(pos[t]) * freq;
  const float c = cosf(angle), s = sinf(angle);
  const float a = v[0], b = v[1];
  v[0] = a * c - b * s;
  v[1] = a * s + b * c;
}

}  // namespace

int rope_cuda_versions() { return 1; }

namespace {

void rope_launch(int version, float* q, float* k, const int* pos, int T, int n_heads,
                 int n_kv_heads, int head_size, float theta, const float* inv_freq,
                 CUstream_st* stream) {
  cuda::detail::require(T >= 1 && n_heads >= 1 && n_kv_heads >= 1 && head_size >= 2, "rope_cuda",
                        "T, n_heads, n_kv_heads must be >= 1 and head_size >= 2");
  cuda::detail::require(head_size % 2 == 0, "rope_cuda", "head_size must be even");
  const int q_dim = n_heads * head_size, k_dim = n_kv_heads * head_size;
  switch (version) {
    case 1: {
      constexpr int kThreads = 256;
      const std::size_t threads = std::size_t(T) * ((q_dim + k_dim) / 2);
      rope_v1_kernel<<<cuda::detail::ceil_div(threads, kThreads), kThreads, 0, stream>>>(
          q, k, pos, T, q_dim, k_dim, head_size, theta, inv_freq);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    default:
      cuda::detail::bad_version("rope_cuda", version, rope_cuda_versions());
  }
}

}  // namespace

void rope_cuda(int version, float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads,
               int head_size, float theta, CUstream_st* stream) {
  rope_launch(version, q, k, pos, T, n_heads, n_kv_heads, head_size, theta, nullptr, stream);
}

void rope_cuda(int version, float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads,
               int head_size, const float* inv_freq, CUstream_st* stream) {
  cuda::detail::require(inv_freq != nullptr, "rope_cuda", "inv_freq must not be null");
  rope_launch(version, q, k, pos, T, n_heads, n_kv_heads, head_size, 0.0f, inv_freq, stream);
}

}  // namespace inferlab::kernels
