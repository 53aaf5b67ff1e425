#pragma once
/// @file matmul.hpp
/// @brief The linear layer: y = x W^T for a batch of T token vectors.
///
/// Every version computes, for each token t and output row o,
///   y[t, o] = sum_i x[t, i] * w[o, i]
/// with x (T, n), w (d, n) row-major (out, in), y (T, d).
/// @note Cost: 2*T*n*d FLOPs; reads n*d weights once (4*n*d bytes), which dominates when T is
/// small: batch-1 decode is a matrix-vector product and is bound by memory bandwidth.

namespace inferlab::kernels {

/// @brief Reference: plain loops, the specification.
void matmul_ref(float* y, const float* x, const float* w, int T, int n, int d);

/// @brief The CPU ladder (kernels/README.md, "The CPU matmul ladder"): 1 lanes (one weight row
/// against up to 4 tokens, 16 independent lanes written as plain loops), 2 blocked
/// (register-tiled micro-kernel, rows blocked for L2, token panels for L1). Both compute every
/// output in the same order, so they return the same bits.
constexpr int kMatmulCpuBestVersion = 2;

/// @brief Number of CPU versions (valid versions are 1..matmul_cpu_versions()).
/// @return 2
int matmul_cpu_versions();

/// @brief One rung of the CPU ladder; same arguments as matmul_ref after the version.
/// @param version 1..matmul_cpu_versions()
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w (d, n) weights, row-major (out, in)
/// @param T tokens (rows of x and y)
/// @param n input features
/// @param d output features
/// @throws std::invalid_argument for a version outside 1..matmul_cpu_versions().
/// @note Every version accumulates y[t, o] in 16 lanes (lane l takes the products at
/// i = l mod 16, in increasing i), reduces them by a fixed halving tree and adds the n % 16
/// leftover products, summed in order. That order depends only on n, never on T, on the
/// token's place in the batch or on the thread count, so a token's result is identical whether
/// it runs alone or in a batch (batch invariance, bit for bit).
void matmul_cpu_version(int version, float* y, const float* x, const float* w, int T, int n, int d);

/// @brief The fast CPU version used by the forward pass: matmul_cpu_version() with
/// kMatmulCpuBestVersion. OpenMP over rows of W; one thread below about 128K multiply-adds.
/// @param y (T, d) output
/// @param x (T, n) input rows (tokens)
/// @param w (d, n) weights, row-major (out, in)
/// @param T tokens (rows of x and y)
/// @param n input features
/// @param d output features
void matmul_cpu(float* y, const float* x, const float* w, int T, int n, int d);

}  // namespace inferlab::kernels
