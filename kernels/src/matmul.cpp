// The linear layer y = x W^T, reference and fast CPU versions.
#include "inferlab/kernels/matmul.hpp"

#include <cstddef>

namespace inferlab::kernels {

void matmul_ref(float* y, const float* x, const float* w, int T, int n, int d) {
  for (int t = 0; t < T; ++t) {
    for (int o = 0; o < d; ++o) {
      float sum = 0.0f;
      for (int i = 0; i < n; ++i) sum += x[std::size_t(t) * n + i] * w[std::size_t(o) * n + i];
      y[std::size_t(t) * d + o] = sum;
    }
  }
}

namespace {

// Lanes of independent partial sums. 16 floats = two AVX2 registers (or four NEON ones): the
// compiler vectorises the lane loop without reassociating anything, so the result is the same
// with and without vector units, and identical for a token alone or inside a batch.
constexpr int kLanes = 16;
// Tokens processed against one weight row at a time: the row is loaded once per group of
// kTokenBlock tokens, and their partial sums stay in registers.
constexpr int kTokenBlock = 4;
// Tokens per tile of x kept hot in cache while the weight rows stream past.
constexpr int kTokenTile = 32;

inline float reduce_lanes(const float* acc) {
  // Fixed pairwise order: part of the kernel's definition (batch invariance depends on it).
  float s[kLanes / 2];
  for (int l = 0; l < kLanes / 2; ++l) s[l] = acc[l] + acc[l + kLanes / 2];
  for (int l = 0; l < kLanes / 4; ++l) s[l] = s[l] + s[l + kLanes / 4];
  for (int l = 0; l < kLanes / 8; ++l) s[l] = s[l] + s[l + kLanes / 8];
  return s[0] + s[1];
}

// Dot products of one weight row with `nt` (<= kTokenBlock) token rows.
template <int NT>
inline void dot_rows(float* out, std::size_t out_stride, const float* w, const float* x, int n) {
  float acc[NT][kLanes] = {};
  const int body = n - n % kLanes;
  for (int i = 0; i < body; i += kLanes) {
    for (int t = 0; t < NT; ++t) {
      const float* xt = x + std::size_t(t) * n + i;
      for (int l = 0; l < kLanes; ++l) acc[t][l] += w[i + l] * xt[l];
    }
  }
  for (int t = 0; t < NT; ++t) {
    const float* xt = x + std::size_t(t) * n;
    float tail = 0.0f;
    for (int i = body; i < n; ++i) tail += w[i] * xt[i];
    out[std::size_t(t) * out_stride] = reduce_lanes(acc[t]) + tail;
  }
}

}  // namespace

// Below this many multiply-adds a parallel region costs more than it saves (waking threads
// takes microseconds); tiny models like stories260K then run on one thread.
constexpr long kParallelMacs = 1L << 17;

void matmul_cpu(float* y, const float* x, const float* w, int T, int n, int d) {
#pragma omp parallel if (long(T) * n * d >= kParallelMacs)
  {
    for (int t0 = 0; t0 < T; t0 += kTokenTile) {
      const int t1 = t0 + kTokenTile < T ? t0 + kTokenTile : T;
      // Static schedule over output rows: each thread streams its own slice of W.
#pragma omp for schedule(static) nowait
      for (int o = 0; o < d; ++o) {
        const float* wo = w + std::size_t(o) * n;
        int t = t0;
        for (; t + kTokenBlock <= t1; t += kTokenBlock)
          dot_rows<kTokenBlock>(y + std::size_t(t) * d + o, d, wo, x + std::size_t(t) * n, n);
        for (; t < t1; ++t) dot_rows<1>(y + std::size_t(t) * d + o, d, wo, x + std::size_t(t) * n, n);
      }
    }
  }
}

}  // namespace inferlab::kernels
