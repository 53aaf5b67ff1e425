// Choosing the next token on the GPU (the specification is in sampling_cuda.hpp and its CPU
// twin in sampling_ref.cpp). A decode step then copies back 4 bytes instead of V floats.
//
// argmax v1     one block of 1024 threads: each thread scans a strided slice keeping the first
//               largest value, then a block-wide (value, index) reduction: warp shuffles, then
//               one warp over the per-warp winners. Ties go to the lower index at every step.
//
// Greedy decoding on the CUDA runner takes its token here (CudaForwardPass::
// forward_batch_greedy). Sampling with a temperature stays on the host, where the Sampler
// applies penalties, top-k, min-p and top-p in one documented order.
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

}  // namespace

int argmax_cuda_versions() { return 1; }

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

}  // namespace inferlab::kernels
