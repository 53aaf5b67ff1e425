#pragma once
/// @file rmsnorm_cuda.hpp
/// @brief CUDA versions of RMSNorm (reference: inferlab/kernels/rmsnorm.hpp).

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one thread per row, 2 one block per row with a block-wide reduction.
constexpr int kRmsnormBestVersion = 2;
int rmsnorm_cuda_versions();

/// @brief out = x / sqrt(mean(x^2) + eps) * weight per row; device pointers.
/// @param out (T, n) (may alias x)  @param x (T, n)  @param weight (n)
/// @note Cost: about 3*T*n FLOPs; reads T*n + n floats, writes T*n.
void rmsnorm_cuda(int version, float* out, const float* x, const float* weight, int T, int n,
                  float eps, CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
