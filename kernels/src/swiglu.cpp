// SwiGLU gate, reference and fast CPU versions.
#include "inferlab/kernels/swiglu.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "inferlab/kernels/softmax.hpp"

namespace inferlab::kernels {

void swiglu_ref(float* out, const float* gate, const float* up, long n) {
  for (long i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_cpu(float* out, const float* gate, const float* up, long n) {
  // silu(g) = g * sigmoid(g), with sigmoid from e = e^-|g| (at most 1, where softmax_exp is
  // defined; it reads a positive argument as its negative): 1 / (1 + e) for g >= 0 and
  // e / (1 + e) below. The sign comes from the bits, not a float compare, and softmax_exp is a
  // polynomial, not a library call: GCC turns the loop into vector instructions (std::exp was
  // one call per element, ~5 % of a stories110M prefill). Within a few ulp of swiglu_ref.
  auto one = [&](long i) {
    const float g = gate[i];
    const float e = softmax_exp(g);
    std::uint32_t gb, eb;
    std::memcpy(&gb, &g, sizeof gb);
    std::memcpy(&eb, &e, sizeof eb);
    const std::uint32_t negative = 0u - (gb >> 31);  // all ones when g < 0
    const std::uint32_t num_bits = (eb & negative) | (0x3f800000u /* 1.0f */ & ~negative);
    float num;
    std::memcpy(&num, &num_bits, sizeof num);
    out[i] = g * (num / (1.0f + e)) * up[i];
  };
  // Small work stays out of the OpenMP runtime altogether (see rmsnorm_cpu).
  if (n <= 65536) {
    for (long i = 0; i < n; ++i) one(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) one(i);
}

}  // namespace inferlab::kernels
