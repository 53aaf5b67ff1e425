#pragma once
/// @file rmsnorm.hpp
/// @brief RMSNorm: out = x / sqrt(mean(x^2) + eps) * weight, per token row.

namespace inferlab::kernels {

/// @brief Reference. x, out (T, n) (may alias), weight (n).
/// @note Cost: about 3*T*n FLOPs, reads T*n + n floats.
void rmsnorm_ref(float* out, const float* x, const float* weight, int T, int n, float eps);
/// @brief Fast CPU version (OpenMP over rows).
void rmsnorm_cpu(float* out, const float* x, const float* weight, int T, int n, float eps);

}  // namespace inferlab::kernels
