// The FMA peak probe: register-only vector multiply-adds.
#include "inferlab/analysis/fma_peak.hpp"

#include <omp.h>

#include <algorithm>

#include "inferlab/base/timer.hpp"

namespace inferlab {

namespace {

#if defined(__AVX512F__)
constexpr int kWidth = 16;
#elif defined(__AVX__)
constexpr int kWidth = 8;
#else
constexpr int kWidth = 4;
#endif
// GCC/Clang vector extension: one register of the widest kind this build may use.
typedef float Vec __attribute__((vector_size(kWidth * sizeof(float))));
// Independent chains: FMA latency (4-5 cycles) times the FMA units (2) needs at least 10;
// 12 fit the 16 registers of AVX2 and leave room for the two constants.
constexpr int kChains = 12;
constexpr long kSteps = 1L << 20;

// a = a * m + c on every chain; m just below 1 and c tiny keep the values finite and normal.
// Without -ffast-math the compiler may not reassociate floats, so it cannot fold the loop into
// a closed form: every step is executed.
float run_chains(float seed) {
  Vec acc[kChains];
  const Vec m = Vec{} + 0.999999f, c = Vec{} + 1e-7f;
  for (int k = 0; k < kChains; ++k) acc[k] = Vec{} + (seed + 0.01f * float(k));
  for (long s = 0; s < kSteps; ++s) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * m + c;
  }
  float sum = 0.0f;
  for (int k = 0; k < kChains; ++k)
    for (int l = 0; l < kWidth; ++l) sum += acc[k][l];
  return sum;
}

}  // namespace

FmaPeakResult measure_fma_peak(int threads, int reps) {
  if (threads <= 0) threads = omp_get_max_threads();
  const double flops_per_thread = 2.0 * kWidth * kChains * double(kSteps);
  double best = 0.0;
  volatile float sink = 0.0f;
  for (int r = 0; r < std::max(reps, 1) + 1; ++r) {  // the first pass wakes threads and clocks
    float total = 0.0f;
    const double t0 = now_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += run_chains(1.0f + 0.001f * float(omp_get_thread_num()));
    const double dt = now_seconds() - t0;
    sink = sink + total;
    if (r > 0) best = std::max(best, flops_per_thread * threads / dt);
  }
  (void)sink;
  return {best, threads, kWidth};
}

}  // namespace inferlab
