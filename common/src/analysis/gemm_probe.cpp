// The FLOP/s probe of hardware.hpp: a float32 GEMM from Eigen, the tuned reference the CPU kernels
// are compared against. Eigen's headers are included here and nowhere else in the core, so the
// code paths Eigen compiles for this CPU (AVX2, AVX-512, ...) stay in this one translation unit.
#include <algorithm>

#include <Eigen/Dense>

#include "inferlab/base/error.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/base/timer.hpp"

namespace inferlab {

double measure_gemm_flops(int n, int threads, int reps) {
  if (n < 16 || threads < 1 || reps < 1)
    throw Error("measure_gemm_flops: need n >= 16, threads >= 1, reps >= 1");
  const int saved = Eigen::nbThreads();
  Eigen::setNbThreads(threads);
  // Values in [-1, 1]: no overflow, no denormals, nothing for the compiler to fold away.
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n);
  const Eigen::MatrixXf b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  c.noalias() = a * b;  // warm-up: page faults, thread start-up, caches
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_seconds();
    c.noalias() = a * b;
    const double dt = now_seconds() - t0;
    best = std::max(best, 2.0 * double(n) * n * n / dt);
  }
  // Read a result so the products cannot be dropped as dead code.
  volatile float sink = c(n / 2, n / 3);
  (void)sink;
  Eigen::setNbThreads(saved);
  return best;
}

}  // namespace inferlab
