#pragma once
// Helpers shared by the .cu files of inferlab_cuda (private: not installed, not included by
// chapters): launch checks, ceil-div, and the warp/block reductions every kernel ladder uses.
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "inferlab/kernels/cuda/device.hpp"
#include "inferlab/kernels/error.hpp"

/// Checks that the last kernel launch was accepted (bad grid, too much shared memory, ...).
/// Errors inside the kernel surface at the next synchronising call, also checked.
#define INFERLAB_CUDA_CHECK_LAUNCH() INFERLAB_CUDA_CHECK(cudaGetLastError())

namespace inferlab::cuda {
/// Throws inferlab::Error for a failed cuBLAS call (file, line, status string).
[[noreturn]] void throw_cublas_error(int status, const char* expr, const char* file, int line);
}  // namespace inferlab::cuda

#define INFERLAB_CUBLAS_CHECK(expr)                                                       \
  do {                                                                                    \
    const cublasStatus_t inferlab_cublas_status_ = (expr);                                \
    if (inferlab_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                 \
      ::inferlab::cuda::throw_cublas_error(int(inferlab_cublas_status_), #expr, __FILE__, \
                                           __LINE__);                                     \
  } while (0)

namespace inferlab::cuda::detail {

constexpr int kWarpSize = 32;

inline unsigned ceil_div(std::size_t a, std::size_t b) { return unsigned((a + b - 1) / b); }

/// Throws inferlab::Error naming the op when a kernel argument is out of range.
inline void require(bool ok, const char* op, const char* what) {
  if (!ok) throw Error(std::string(op) + ": " + what);
}

/// Throws for a version number that the op does not have.
[[noreturn]] inline void bad_version(const char* op, int version, int n_versions) {
  throw Error(std::string(op) + ": no version " + std::to_string(version) +
                              " (versions are 1.." + std::to_string(n_versions) + ")");
}

__device__ inline float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Sum over the whole block, returned to every thread. blockDim.x must be a multiple of 32
/// (<= 1024) and every thread of the block must call it (it synchronises).
__device__ inline float block_sum(float v) {
  __shared__ float partial[kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int n_warps = blockDim.x / kWarpSize;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < n_warps ? partial[lane] : 0.0f;
  return warp_sum(v);
}

/// Maximum over the whole block, returned to every thread (same rules as block_sum).
__device__ inline float block_max(float v) {
  __shared__ float partial[kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int n_warps = blockDim.x / kWarpSize;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < n_warps ? partial[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace inferlab::cuda::detail
