// Row softmax, reference and fast CPU versions.
#include "inferlab/kernels/softmax.hpp"

#include <cmath>
#include <cstddef>

namespace inferlab::kernels {

void softmax_ref(float* x, int rows, int n) {
  for (int r = 0; r < rows; ++r) {
    float* v = x + std::size_t(r) * n;
    float max = v[0];
    for (int i = 1; i < n; ++i) max = v[i] > max ? v[i] : max;
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
      v[i] = std::exp(v[i] - max);  // subtracting the max keeps exp() from overflowing
      sum += v[i];
    }
    for (int i = 0; i < n; ++i) v[i] /= sum;
  }
}

void softmax_cpu(float* x, int rows, int n) {
#pragma omp parallel for schedule(static) if (long(rows) * n >= (1L << 16))
  for (int r = 0; r < rows; ++r) {
    float* v = x + std::size_t(r) * n;
    float max = v[0];
    for (int i = 1; i < n; ++i) max = v[i] > max ? v[i] : max;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
      v[i] = std::exp(v[i] - max);
      sum += v[i];
    }
    const float inv = float(1.0 / sum);
    for (int i = 0; i < n; ++i) v[i] *= inv;
  }
}

}  // namespace inferlab::kernels
