// STREAM-style memory read bandwidth probe.
#include "inferlab/analysis/membw.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "inferlab/base/timer.hpp"

namespace inferlab {

BandwidthResult measure_read_bandwidth(std::size_t bytes, int threads, int reps) {
  if (threads <= 0) threads = omp_get_max_threads();
  const std::size_t n = std::max<std::size_t>(bytes / sizeof(float), 1024);
  std::vector<float> buf(n);
  // First touch by the threads that will read, so pages land near them (NUMA machines).
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < std::int64_t(n); ++i) buf[i] = float(i & 1023) * 1e-3f;

  double best = 0.0;
  volatile float sink = 0.0f;  // keeps the sums alive
  for (int r = 0; r < std::max(reps, 1); ++r) {
    const double t0 = now_seconds();
    float total = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      // 16 independent lanes, like the matmul kernel, so the loop is load-bound, not
      // add-latency-bound.
      float acc[16] = {};
#pragma omp for schedule(static) nowait
      for (std::int64_t i = 0; i < std::int64_t(n / 16); ++i)
        for (int l = 0; l < 16; ++l) acc[l] += buf[std::size_t(i) * 16 + l];
      for (float a : acc) total += a;
    }
    const double dt = now_seconds() - t0;
    sink = sink + total;
    best = std::max(best, double(n) * sizeof(float) / dt / 1e9);
  }
  (void)sink;
  return {best, threads, n * sizeof(float)};
}

}  // namespace inferlab
