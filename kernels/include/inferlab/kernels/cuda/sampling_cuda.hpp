#pragma once
/// @file sampling_cuda.hpp
/// @brief Choosing the next token on the device, so that the logits never leave the GPU:
/// greedy argmax, with a CPU twin that is its specification. (Sampling with a temperature runs
/// on the host: see inferlab::Sampler.)

struct CUstream_st;

namespace inferlab::kernels {

/// @name Greedy
/// @{

/// @brief Versions: 1 one block, strided scan and block-wide (value, index) reduction.
constexpr int kArgmaxBestVersion = 1;
/// @brief Number of versions (valid versions are 1..argmax_cuda_versions()).
int argmax_cuda_versions();

/// @brief CPU twin: the index of the largest non-NaN value of x (n), the lowest index on ties;
/// 0 if every value is NaN.
int argmax_ref(const float* x, int n);

/// @brief argmax_ref on the device.
/// @param version 1..argmax_cuda_versions()
/// @param out_index one int in device memory (written)
/// @param x (n) device pointer
/// @param n number of values (V for logits)
/// @param stream the stream to enqueue on (nullptr: default stream); the call does not wait
/// @note Reads 4*n bytes.
void argmax_cuda(int version, int* out_index, const float* x, int n, CUstream_st* stream = nullptr);
/// @}

}  // namespace inferlab::kernels
