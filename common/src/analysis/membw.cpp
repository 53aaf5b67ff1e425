// STREAM-style memory read bandwidth probe.
#include "inferlab/analysis/membw.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "inferlab/base/timer.hpp"
#include "inferlab/kernels/huge_pages.hpp"

namespace inferlab {

namespace {
// Eight float lanes (GCC/Clang vector extension): one AVX register, two SSE ones.
typedef float V8 __attribute__((vector_size(8 * sizeof(float))));
}  // namespace

BandwidthResult measure_read_bandwidth(std::size_t bytes, int threads, int reps) {
  if (threads <= 0) threads = omp_get_max_threads();
  const std::size_t n = std::max<std::size_t>(bytes / sizeof(float), 1024);
  // On huge pages where the OS grants them (huge_pages.hpp), as the packed weights are: a roof
  // is the best the machine can do.
  const std::size_t alloc = (n * sizeof(float) + kernels::kHugePageBytes - 1) /
                            kernels::kHugePageBytes * kernels::kHugePageBytes;
  const std::unique_ptr<float, decltype(&std::free)> owner(
      static_cast<float*>(std::aligned_alloc(kernels::kHugePageBytes, alloc)), &std::free);
  if (!owner) throw std::bad_alloc();
  kernels::advise_huge_pages(owner.get(), alloc);
  float* const buf = owner.get();
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
      // Each thread reads its share of the buffer as two sequential streams side by side (the
      // two halves of the share). A core keeps more cache misses in flight over two streams than
      // over one: 17-19 against 15-17 GB/s measured on one Zen 3 core. The packed matmul reads
      // two weight panels at once in decode, and with one stream here its batch-1 point sat
      // above this "roof". Two 16-float vector lanes per stream keep the loop load-bound, not
      // add-latency-bound.
      const std::size_t blocks = n / 32;  // pairs of 16-float blocks, one from each stream
      const int id = omp_get_thread_num(), nt = omp_get_num_threads();
      const std::size_t b0 = blocks * id / nt, b1 = blocks * (id + 1) / nt, half = b1 - b0;
      const float* s0 = buf + b0 * 32;  // this thread's share: [s0, s0 + 32 * half)
      const float* s1 = s0 + half * 16;
      V8 acc[4] = {};
      for (std::size_t i = 0; i < half * 16; i += 16) {
        V8 a, b, c, d;
        std::memcpy(&a, s0 + i, sizeof a);
        std::memcpy(&b, s0 + i + 8, sizeof b);
        std::memcpy(&c, s1 + i, sizeof c);
        std::memcpy(&d, s1 + i + 8, sizeof d);
        acc[0] += a;
        acc[1] += b;
        acc[2] += c;
        acc[3] += d;
      }
      for (const V8& v : acc)
        for (int l = 0; l < 8; ++l) total += v[l];
    }
    const double dt = now_seconds() - t0;
    sink = sink + total;
    best = std::max(best, double(n / 32 * 32) * sizeof(float) / dt / 1e9);
  }
  (void)sink;
  return {best, threads, n * sizeof(float)};
}

}  // namespace inferlab
