#pragma once
/// @file swiglu_cuda.hpp
/// @brief CUDA version of the SwiGLU gate (reference: inferlab/kernels/swiglu.hpp).

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one thread per element (grid-stride loop).
constexpr int kSwigluBestVersion = 1;
/// @brief Number of versions (valid versions are 1..swiglu_cuda_versions()).
int swiglu_cuda_versions();

/// @brief out = silu(gate) * up elementwise over n values; out may alias gate; device pointers.
/// @note Moves 12*n bytes: bound by memory bandwidth.
void swiglu_cuda(int version, float* out, const float* gate, const float* up, long n,
                 CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
