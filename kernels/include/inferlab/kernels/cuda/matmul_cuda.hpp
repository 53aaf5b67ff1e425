#pragma once
/// @file matmul_cuda.hpp
/// @brief CUDA versions of the linear layer y = x W^T (see inferlab/kernels/matmul.hpp for the
/// reference and the layout). The ladder is described at the top of kernels/cuda/matmul.cu and
/// in kernels/README.md.

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 naive (one thread per output), 2 one warp per output (coalesced),
/// 3 shared-memory tiled, 4 cuBLAS SGEMM (FP32, no TF32).
constexpr int kMatmulBestVersion = 4;
/// @brief Number of versions (valid versions are 1..matmul_cuda_versions()).
int matmul_cuda_versions();

/// @brief y = x W^T on the device, same argument order as matmul_ref.
/// @param version 1..matmul_cuda_versions()
/// @param y (T, d) device pointer, output
/// @param x (T, n) device pointer
/// @param w (d, n) device pointer, row-major (out, in)
/// @param T rows of x and y (tokens)
/// @param n input features (columns of x and w)
/// @param d output features (columns of y, rows of w)
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @throws inferlab::Error for a bad version or a non-positive dimension, or if the launch
///         fails.
/// @note Cost: 2*T*n*d FLOPs; at least 4*(n*d + T*n + T*d) bytes moved.
void matmul_cuda(int version, float* y, const float* x, const float* w, int T, int n, int d,
                 CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
