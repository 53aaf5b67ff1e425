#pragma once
/// @file rmsnorm_cuda.hpp
/// @brief CUDA versions of RMSNorm (reference: inferlab/kernels/rmsnorm.hpp).

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one thread per row, 2 one block per row with a block-wide reduction.
constexpr int kRmsnormBestVersion = 2;
/// @brief Number of versions (valid versions are 1..rmsnorm_cuda_versions()).
int rmsnorm_cuda_versions();

/// @brief out = x / sqrt(mean(x^2) + eps) * weight per row; device pointers.
/// @param version 1..rmsnorm_cuda_versions()
/// @param out (T, n) (may alias x)
/// @param x (T, n)
/// @param weight (n)
/// @param T rows (tokens)
/// @param n floats per row
/// @param eps added to the mean square before the square root (e.g. 1e-5)
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @note Cost: about 3*T*n FLOPs; reads T*n + n floats, writes T*n.
void rmsnorm_cuda(int version, float* out, const float* x, const float* weight, int T, int n,
                  float eps, CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
