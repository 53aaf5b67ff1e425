// RMSNorm, reference and fast CPU versions.
#include "inferlab/kernels/rmsnorm.hpp"

#include <cmath>
#include <cstddef>

namespace inferlab::kernels {

void rmsnorm_ref(float* out, const float* x, const float* weight, int T, int n, float eps) {
  for (int t = 0; t < T; ++t) {
    const float* xt = x + std::size_t(t) * n;
    float* ot = out + std::size_t(t) * n;
    float ss = 0.0f;
    for (int i = 0; i < n; ++i) ss += xt[i] * xt[i];
    const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int i = 0; i < n; ++i) ot[i] = weight[i] * (scale * xt[i]);
  }
}

void rmsnorm_cpu(float* out, const float* x, const float* weight, int T, int n, float eps) {
  // Rows are independent; within a row the sum is accumulated in double so that the result is
  // as accurate as the reference's (or better) regardless of the row length.
  auto row = [&](int t) {
    const float* xt = x + std::size_t(t) * n;
    float* ot = out + std::size_t(t) * n;
    double ss = 0.0;
    for (int i = 0; i < n; ++i) ss += double(xt[i]) * xt[i];
    const float scale = float(1.0 / std::sqrt(ss / n + eps));
    for (int i = 0; i < n; ++i) ot[i] = weight[i] * (scale * xt[i]);
  };
  // Small work stays out of the OpenMP runtime altogether (an if(false) region still costs
  // hundreds of nanoseconds, paid in every layer of every decode step).
  if (long(T) * n < (1L << 16)) {
    for (int t = 0; t < T; ++t) row(t);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int t = 0; t < T; ++t) row(t);
}

}  // namespace inferlab::kernels
