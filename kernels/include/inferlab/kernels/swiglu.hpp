#pragma once
/// @file swiglu.hpp
/// @brief The SwiGLU gate: out = silu(gate) * up, silu(x) = x / (1 + e^-x).

namespace inferlab::kernels {

/// @brief Reference. out, gate, up (n) elementwise; out may alias gate.
void swiglu_ref(float* out, const float* gate, const float* up, long n);
/// @brief Fast CPU version.
void swiglu_cpu(float* out, const float* gate, const float* up, long n);

}  // namespace inferlab::kernels
