#pragma once
/// @file softmax_cuda.hpp
/// @brief CUDA versions of the row softmax (reference: inferlab/kernels/softmax.hpp).

struct CUstream_st;

namespace inferlab::kernels {

/// @brief Versions: 1 one thread per row (three serial passes), 2 one block per row.
constexpr int kSoftmaxBestVersion = 2;
/// @brief Number of versions (valid versions are 1..softmax_cuda_versions()).
int softmax_cuda_versions();

/// @brief Softmax of each row of x (rows, n), in place, device pointer.
/// @note Reads the row twice and writes it once: about 12*rows*n bytes.
void softmax_cuda(int version, float* x, int rows, int n, CUstream_st* stream = nullptr);

}  // namespace inferlab::kernels
