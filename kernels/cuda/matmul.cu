// The linear layer y(T,d) = x(T,n) . w(d,n)^T on the GPU: a ladder of four versions.
//
// v1  naive: one thread per output y[t,o], threads of a warp take neighbouring o. Each thread
//     walks its own weight row, so at every step the 32 lanes of a warp read 32 addresses n
//     floats apart: 32 memory transactions where one would do (uncoalesced).
// v2  coalesced: one warp per output. The 32 lanes read 32 consecutive floats of the weight row
//     and of x (one transaction), accumulate strided partial sums, and combine them with warp
//     shuffles. This is the right shape for matrix-vector products (decode, T = 1), which are
//     bound by memory bandwidth: every weight is read once.
// v3  shared-memory tiling: a 16x16 block computes a 16x16 tile of y. It walks the n dimension
//     in 16-wide steps, loading a tile of x and a tile of w into shared memory (coalesced), and
//     every loaded value is reused 16 times from shared memory instead of being re-read from
//     global memory: the data reuse that makes matrix-matrix products (prefill) compute-bound.
// v4  cuBLAS SGEMM (FP32 math mode, TF32 tensor cores disabled): the reference to beat. cuBLAS
//     is column-major; a row-major (rows, cols) matrix is the column-major (cols, rows) matrix,
//     i.e. its transpose. So we ask cuBLAS for y^T (d, T) = w (d, n) . x^T (n, T): A = w seen
//     column-major is (n, d) and is used transposed (CUBLAS_OP_T, lda = n); B = x seen
//     column-major is already x^T (n, T) (CUBLAS_OP_N, ldb = n); C = y seen column-major is
//     y^T (d, T) (ldc = d). No data is moved to get the transposes.
#include <cublas_v2.h>

#include "common.cuh"
#include "inferlab/kernels/cuda/matmul_cuda.hpp"

namespace inferlab::kernels {

namespace {

using cuda::detail::ceil_div;
using cuda::detail::kWarpSize;

__global__ void matmul_v1_kernel(float* y, const float* x, const float* w, int T, int n, int d) {
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(T) * d) return;
  const std::size_t t = idx / d, o = idx % d;
  const float* xt = x + t * n;
  const float* wo = w + o * n;
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += xt[i] * wo[i];
  y[idx] = sum;
}

__global__ void matmul_v2_kernel(float* y, const float* x, const float* w, int T, int n, int d) {
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (warp >= std::size_t(T) * d) return;  // the whole warp leaves together
  const std::size_t t = warp / d, o = warp % d;
  const float* xt = x + t * n;
  const float* wo = w + o * n;
  float sum = 0.0f;
  for (int i = lane; i < n; i += kWarpSize) sum += xt[i] * wo[i];
  sum = cuda::detail::warp_sum(sum);
  if (lane == 0) y[warp] = sum;
}

constexpr int kTile = 16;

// blockDim (kTile, kTile): threadIdx.y picks the token row, threadIdx.x the output column.
__global__ void matmul_v3_kernel(float* y, const float* x, const float* w, int T, int n, int d) {
  // +1 column of padding: the inner loop reads ws[threadIdx.x][k], a column walk that would
  // otherwise hit one shared-memory bank 16 times.
  __shared__ float xs[kTile][kTile + 1];
  __shared__ float ws[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int t = blockIdx.y * kTile + ty;      // token of this thread's output
  const int o = blockIdx.x * kTile + tx;      // output feature of this thread's output
  const int w_row = blockIdx.x * kTile + ty;  // weight row this thread loads
  float sum = 0.0f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    const int k = k0 + tx;  // consecutive tx read consecutive addresses: coalesced loads
    xs[ty][tx] = (t < T && k < n) ? x[std::size_t(t) * n + k] : 0.0f;
    ws[ty][tx] = (w_row < d && k < n) ? w[std::size_t(w_row) * n + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) sum += xs[ty][kk] * ws[tx][kk];
    __syncthreads();  // the tiles are overwritten by the next step
  }
  if (t < T && o < d) y[std::size_t(t) * d + o] = sum;
}

// One cuBLAS handle per host thread, created on first use. It is deliberately never destroyed:
// destroying it from a thread_local/static destructor can run after the CUDA runtime has been
// torn down at process exit.
cublasHandle_t cublas_handle() {
  thread_local cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    INFERLAB_CUBLAS_CHECK(cublasCreate(&h));
    // Plain FP32: no TF32 tensor-core down-conversion, so results match the CPU closely.
    INFERLAB_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    return h;
  }();
  return handle;
}

}  // namespace

int matmul_cuda_versions() { return 4; }

void matmul_cuda(int version, float* y, const float* x, const float* w, int T, int n, int d,
                 CUstream_st* stream) {
  cuda::detail::require(T >= 1 && n >= 1 && d >= 1, "matmul_cuda", "T, n and d must be >= 1");
  const std::size_t outputs = std::size_t(T) * d;
  switch (version) {
    case 1: {
      constexpr int kThreads = 256;
      matmul_v1_kernel<<<ceil_div(outputs, kThreads), kThreads, 0, stream>>>(y, x, w, T, n, d);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    case 2: {
      constexpr int kThreads = 256;  // 8 warps: 8 outputs per block
      const std::size_t threads = outputs * kWarpSize;
      matmul_v2_kernel<<<ceil_div(threads, kThreads), kThreads, 0, stream>>>(y, x, w, T, n, d);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    case 3: {
      cuda::detail::require(ceil_div(T, kTile) <= 65535u, "matmul_cuda v3",
                            "T too large for the grid's y dimension");
      const dim3 block(kTile, kTile);
      const dim3 grid(ceil_div(d, kTile), ceil_div(T, kTile));
      matmul_v3_kernel<<<grid, block, 0, stream>>>(y, x, w, T, n, d);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    case 4: {
      cublasHandle_t h = cublas_handle();
      INFERLAB_CUBLAS_CHECK(cublasSetStream(h, stream));
      const float alpha = 1.0f, beta = 0.0f;
      // Column-major view: y^T (d, T) = op(A) (d, n) . B (n, T), with A = w viewed (n, d).
      INFERLAB_CUBLAS_CHECK(
          cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, d, T, n, &alpha, w, n, x, n, &beta, y, d));
      break;
    }
    default:
      cuda::detail::bad_version("matmul_cuda", version, matmul_cuda_versions());
  }
}

}  // namespace inferlab::kernels
