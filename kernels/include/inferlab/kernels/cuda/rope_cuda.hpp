#pragma once
/// @file rope_cuda.hpp
/// @brief CUDA version of rotary position embedding (reference: inferlab/kernels/rope.hpp).

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one thread per rotated pair (q and k in one launch).
constexpr int kRopeBestVersion = 1;
/// @brief Number of versions (valid versions are 1..rope_cuda_versions()).
int rope_cuda_versions();

/// @brief Rotates q (T, Nh*hs) and k (T, Nkv*hs) in place; pos (T) on the device.
/// head_size must be even.
void rope_cuda(int version, float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads,
               int head_size, float theta, CUstream_st* stream = nullptr);
/// @brief The same with the hs/2 inverse frequencies given (on the device): pair j rotates by
/// pos * inv_freq[j], for RoPE scaling rules (see the CPU rope_cpu overload).
void rope_cuda(int version, float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads,
               int head_size, const float* inv_freq, CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
