// Choosing the next token on the GPU (the specification is in sampling_cuda.hpp and its CPU
// twin in sampling_ref.cpp). A decode step then copies back 4 bytes instead of V floats.
//
// argmax v1     one block of 1024 threads: each thread scans a strided slice keeping the first
//               largest value, then a block-wide (value, index) reduction: warp shuffles, then
//               one warp over the per-warp winners. Ties go to the lower index at every step.
// top-p v1      one block of 1024 threads, no scratch memory and no sort:
//               (a) block-wide max, then the mass function mass(t) = sum of p_i >= t, where
//                   p_i = exp((x_i - max) / temperature) is recomputed on the fly;
//               (b) tau by bisection over the bit patterns of floats in [0, 1] (for positive
//                   floats, the order of the bits as integers is the order of the values): at
//                   most 31 passes over the logits, each one block-wide reduction;
//               (c) the inverse CDF in index order, chunk by chunk with cub::BlockScan: the
//                   first kept index whose cumulative mass exceeds u * mass(tau).
//               One block is enough for a vocabulary of ~100K (a few microseconds); a
//               multi-block version would only matter for batched sampling.
#include <cub/block/block_scan.cuh>

#include <climits>

#include "common.cuh"
#include "inferlab/kernels/cuda/sampling_cuda.hpp"

namespace inferlab::kernels {

namespace {

constexpr int kThreads = 1024;

// (value, index) with index -1 meaning "nothing seen"; the better of two candidates.
struct Candidate {
  float value;
  int index;
};

__device__ inline Candidate better(Candidate a, Candidate b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

__device__ inline Candidate warp_best(Candidate c) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    Candidate other;
    other.value = __shfl_xor_sync(0xffffffffu, c.value, offset);
    other.index = __shfl_xor_sync(0xffffffffu, c.index, offset);
    c = better(c, other);
  }
  return c;
}

__global__ void __launch_bounds__(kThreads)
    argmax_v1_kernel(int* out_index, const float* x, int n) {
  __shared__ Candidate partial[32];
  Candidate c{-INFINITY, -1};
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = x[i];
    if (!isnan(v) && (c.index < 0 || v > c.value)) c = {v, i};  // increasing i: first max kept
  }
  c = warp_best(c);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = c;
  __syncthreads();
  if (warp == 0) {
    c = lane < int(blockDim.x / 32) ? partial[lane] : Candidate{-INFINITY, -1};
    c = warp_best(c);
    if (lane == 0) *out_index = c.index < 0 ? 0 : c.index;
  }
}

// Sum of p_i over {p_i >= t}; identical in every thread (see detail::block_sum).
__device__ inline float mass_at_least(const float* x, int n, float max, float temperature,
                                      float t) {
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float p = expf((x[i] - max) / temperature);  // exactly as in the spec and the twin
    if (p >= t) sum += p;
  }
  return cuda::detail::block_sum(sum);
}

__global__ void __launch_bounds__(kThreads)
    top_p_v1_kernel(int* out_token, const float* x, int n, float temperature, float top_p,
                    float u) {
  using BlockScan = cub::BlockScan<float, kThreads>;
  __shared__ typename BlockScan::TempStorage scan_storage;
  __shared__ unsigned lo_bits, hi_bits;
  __shared__ float carry;
  __shared__ int chosen, last_kept;

  float local_max = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) local_max = fmaxf(local_max, x[i]);
  const float max = cuda::detail::block_max(local_max);

  // (b) Invariant: mass(lo) >= threshold > mass(hi). mass(0) is the total, and no p exceeds 1.
  const float total = mass_at_least(x, n, max, temperature, 0.0f);
  const float threshold = top_p * total;
  if (threadIdx.x == 0) {
    lo_bits = __float_as_uint(0.0f);
    hi_bits = __float_as_uint(1.0f) + 1u;
  }
  __syncthreads();
  while (hi_bits - lo_bits > 1u) {  // shared values: every thread takes the same branch
    const unsigned mid = lo_bits + (hi_bits - lo_bits) / 2u;
    const float m = mass_at_least(x, n, max, temperature, __uint_as_float(mid));
    __syncthreads();  // everyone has read lo_bits / hi_bits before thread 0 moves them
    if (threadIdx.x == 0) {
      if (m >= threshold) lo_bits = mid;
      else hi_bits = mid;
    }
    __syncthreads();
  }
  const float tau = __uint_as_float(lo_bits);

  // (c) The inverse CDF over the kept tokens, in index order.
  const float kept_mass = mass_at_least(x, n, max, temperature, tau);
  const float target = u * kept_mass;
  if (threadIdx.x == 0) {
    carry = 0.0f;
    chosen = INT_MAX;
    last_kept = -1;
  }
  __syncthreads();
  for (int base = 0; base < n; base += blockDim.x) {
    const int i = base + threadIdx.x;
    float p = 0.0f;
    if (i < n) {
      p = expf((x[i] - max) / temperature);
      if (!(p >= tau)) p = 0.0f;
    }
    float before = 0.0f, chunk_mass = 0.0f;
    BlockScan(scan_storage).ExclusiveSum(p, before, chunk_mass);
    const float lo = carry + before, hi = lo + p;
    if (p > 0.0f) {
      atomicMax(&last_kept, i);
      if (lo <= target && target < hi) atomicMin(&chosen, i);
    }
    __syncthreads();  // chosen and carry are read below; scan_storage is reused next chunk
    const bool done = chosen != INT_MAX;
    __syncthreads();
    if (threadIdx.x == 0) carry += chunk_mass;
    __syncthreads();
    if (done) break;
  }
  if (threadIdx.x == 0) *out_token = chosen != INT_MAX ? chosen : (last_kept >= 0 ? last_kept : 0);
}

}  // namespace

int argmax_cuda_versions() { return 1; }
int top_p_sample_cuda_versions() { return 1; }

void argmax_cuda(int version, int* out_index, const float* x, int n, CUstream_st* stream) {
  cuda::detail::require(n >= 1, "argmax_cuda", "n must be >= 1");
  switch (version) {
    case 1:
      argmax_v1_kernel<<<1, kThreads, 0, stream>>>(out_index, x, n);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    default:
      cuda::detail::bad_version("argmax_cuda", version, argmax_cuda_versions());
  }
}

void top_p_sample_cuda(int version, int* out_token, const float* logits, int n, float temperature,
                       float top_p, float u, CUstream_st* stream) {
  using cuda::detail::require;
  require(n >= 1, "top_p_sample_cuda", "n must be >= 1");
  require(temperature > 0.0f && std::isfinite(temperature), "top_p_sample_cuda",
          "temperature must be > 0 (use argmax_cuda for greedy)");
  require(top_p > 0.0f && top_p <= 1.0f, "top_p_sample_cuda", "top_p must be in (0, 1]");
  require(u >= 0.0f && u < 1.0f, "top_p_sample_cuda", "u must be in [0, 1)");
  switch (version) {
    case 1:
      top_p_v1_kernel<<<1, kThreads, 0, stream>>>(out_token, logits, n, temperature, top_p, u);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    default:
      cuda::detail::bad_version("top_p_sample_cuda", version, top_p_sample_cuda_versions());
  }
}

}  // namespace inferlab::kernels
