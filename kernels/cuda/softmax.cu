// Row softmax on the GPU (numerically stable: the row maximum is subtracted before exp).
//
// v1  one thread per row: max, exp-and-sum, scale, each a serial pass. Uses one thread per
//     row, so a single long row (the vocabulary, T = 1) runs on one thread.
// v2  one block per row: the max and the sum are block-wide reductions (warp shuffles and
//     shared memory), every pass strides over the row so that loads are coalesced.
#include "common.cuh"
#include "inferlab/kernels/cuda/softmax_cuda.hpp"

namespace inferlab::kernels {

namespace {

__global__ void softmax_v1_kernel(float* x, int rows, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float* v = x + std::size_t(r) * n;
  float max = v[0];
  for (int i = 1; i < n; ++i) max = fmaxf(max, v[i]);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    v[i] = expf(v[i] - max);
    sum += v[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) v[i] *= inv;
}

constexpr int kV2Threads = 512;

// __launch_bounds__: 512 threads per block must fit the register file, whatever the compiler.
__global__ void __launch_bounds__(kV2Threads) softmax_v2_kernel(float* x, int n) {
  float* v = x + std::size_t(blockIdx.x) * n;
  float max = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) max = fmaxf(max, v[i]);
  max = cuda::detail::block_max(max);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = expf(v[i] - max);
    v[i] = e;
    sum += e;
  }
  sum = cuda::detail::block_sum(sum);
  const float inv = 1.0f / sum;
  for (int i = threadIdx.x; i < n; i += blockDim.x) v[i] *= inv;
}

}  // namespace

int softmax_cuda_versions() { return 2; }

void softmax_cuda(int version, float* x, int rows, int n, CUstream_st* stream) {
  cuda::detail::require(rows >= 1 && n >= 1, "softmax_cuda", "rows and n must be >= 1");
  switch (version) {
    case 1: {
      constexpr int kThreads = 128;
      softmax_v1_kernel<<<cuda::detail::ceil_div(rows, kThreads), kThreads, 0, stream>>>(x, rows,
                                                                                         n);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    case 2: {
      softmax_v2_kernel<<<rows, kV2Threads, 0, stream>>>(x, n);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    default:
      cuda::detail::bad_version("softmax_cuda", version, softmax_cuda_versions());
  }
}

}  // namespace inferlab::kernels
