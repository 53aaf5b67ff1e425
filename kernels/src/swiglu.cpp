// SwiGLU gate, reference and fast CPU versions.
#include "inferlab/kernels/swiglu.hpp"

#include <cmath>

namespace inferlab::kernels {

void swiglu_ref(float* out, const float* gate, const float* up, long n) {
  for (long i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_cpu(float* out, const float* gate, const float* up, long n) {
  auto one = [&](long i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
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
