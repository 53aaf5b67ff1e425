#pragma once
/// @file softmax.hpp
/// @brief Numerically stable softmax over each row (the max is subtracted first).

namespace inferlab::kernels {

/// @brief Reference. x (rows, n) in place.
void softmax_ref(float* x, int rows, int n);
/// @brief Fast CPU version.
void softmax_cpu(float* x, int rows, int n);

}  // namespace inferlab::kernels
