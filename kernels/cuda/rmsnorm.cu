// RMSNorm on the GPU: out[t,:] = x[t,:] / sqrt(mean(x[t,:]^2) + eps) * weight.
//
// v1  one thread per row: a serial sum of squares, then a serial scale. Fine when there are
//     thousands of rows; for decode (T = 1) a single thread does all the work.
// v2  one block per row: threads stride over the row (coalesced), the sum of squares is
//     combined with warp shuffles and shared memory (detail::block_sum), then every thread
//     scales its own elements. Parallel in n, so it also suits T = 1.
#include "common.cuh"
#include "inferlab/kernels/cuda/rmsnorm_cuda.hpp"

namespace inferlab::kernels {

namespace {

using cuda::detail::ceil_div;

__global__ void rmsnorm_v1_kernel(float* out, const float* x, const float* weight, int T, int n,
                                  float eps) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const float* xt = x + std::size_t(t) * n;
  float* ot = out + std::size_t(t) * n;
  float ss = 0.0f;
  for (int i = 0; i < n; ++i) ss += xt[i] * xt[i];
  const float scale = 1.0f / sqrtf(ss / float(n) + eps);
  for (int i = 0; i < n; ++i) ot[i] = weight[i] * (scale * xt[i]);
}

__global__ void rmsnorm_v2_kernel(float* out, const float* x, const float* weight, int n,
                                  float eps) {
  const float* xt = x + std::size_t(blockIdx.x) * n;
  float* ot = out + std::size_t(blockIdx.x) * n;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xt[i] * xt[i];
  ss = cuda::detail::block_sum(ss);
  const float scale = 1.0f / sqrtf(ss / float(n) + eps);
  // Each thread reads back only the elements it read itself, so out may alias x.
  for (int i = threadIdx.x; i < n; i += blockDim.x) ot[i] = weight[i] * (scale * xt[i]);
}

}  // namespace

int rmsnorm_cuda_versions() { return 2; }

void rmsnorm_cuda(int version, float* out, const float* x, const float* weight, int T, int n,
                  float eps, CUstream_st* stream) {
  cuda::detail::require(T >= 1 && n >= 1, "rmsnorm_cuda", "T and n must be >= 1");
  switch (version) {
    case 1: {
      constexpr int kThreads = 128;
      rmsnorm_v1_kernel<<<ceil_div(T, kThreads), kThreads, 0, stream>>>(out, x, weight, T, n, eps);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    case 2: {
      constexpr int kThreads = 256;
      rmsnorm_v2_kernel<<<T, kThreads, 0, stream>>>(out, x, weight, n, eps);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    default:
      cuda::detail::bad_version("rmsnorm_cuda", version, rmsnorm_cuda_versions());
  }
}

}  // namespace inferlab::kernels
