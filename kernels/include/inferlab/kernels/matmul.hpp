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

/// @brief Fast CPU version: OpenMP over output rows, each dot product accumulated in 16
/// independent lanes (vectorisable, no -ffast-math needed) and reduced in a fixed order. The
/// reduction order of y[t, o] depends only on n, never on T or on the thread count, so a
/// token's result is identical whether it runs alone or in a batch.
void matmul_cpu(float* y, const float* x, const float* w, int T, int n, int d);

}  // namespace inferlab::kernels
