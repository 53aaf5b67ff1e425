// matmul ladder benchmark: decode (matrix-vector, memory-bound: GB/s) and prefill
// (matrix-matrix, compute-bound: TFLOP/s). Validates every version first.
#include "bench_support.hpp"
#include "inferlab/kernels/cuda/matmul_cuda.hpp"
#include "inferlab/kernels/matmul.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

namespace {

struct Case {
  const char* name;
  int T, n, d;
  bench::Unit unit;
};

}  // namespace

int main() {
  const cuda::DeviceInfo dev = bench::start("matmul");
  const Case cases[] = {{"decode T=1 4096->11008", 1, 4096, 11008, bench::Unit::GBs},
                        {"prefill T=512 4096->4096", 512, 4096, 4096, bench::Unit::TFLOPs}};
  bool all_pass = true;
  for (const Case& c : cases) {
    std::printf("-- %s (x (%d, %d), w (%d, %d))\n", c.name, c.T, c.n, c.d, c.n);
    const auto x = bench::random_floats(std::size_t(c.T) * c.n, -1, 1, 1);
    const auto w = bench::random_floats(std::size_t(c.d) * c.n, -1, 1, 2);
    std::vector<float> want(std::size_t(c.T) * c.d);
    // The reference for the large case is the OpenMP CPU version (itself tested against
    // matmul_ref by the core tests): plain loops would take minutes at 17 GFLOP.
    if (c.T == 1)
      k::matmul_ref(want.data(), x.data(), w.data(), c.T, c.n, c.d);
    else
      k::matmul_cpu(want.data(), x.data(), w.data(), c.T, c.n, c.d);
    cuda::DeviceBuffer<float> dx(x), dw(w), dy(want.size());
    std::vector<bool> ok(k::matmul_cuda_versions() + 1);
    for (int v = 1; v <= k::matmul_cuda_versions(); ++v) {
      dy.zero();
      k::matmul_cuda(v, dy.data(), dx.data(), dw.data(), c.T, c.n, c.d);
      ok[v] = bench::validate(c.name, v, dy.to_host(), want, 1e-3, 1e-3);
      all_pass = all_pass && ok[v];
    }
    const double bytes = 4.0 * (double(c.n) * c.d + double(c.T) * c.n + double(c.T) * c.d);
    const double flops = 2.0 * c.T * double(c.n) * c.d;
    bench::Best best;
    for (int v = 1; v <= k::matmul_cuda_versions(); ++v) {
      if (!ok[v]) continue;
      const float ms = bench::time_ms(
          [&] { k::matmul_cuda(v, dy.data(), dx.data(), dw.data(), c.T, c.n, c.d); });
      bench::report(dev, c.name, v, ms, c.unit == bench::Unit::GBs ? bytes : flops, c.unit, best);
    }
    bench::summary(dev, std::string("matmul ") + c.name, best, c.unit, k::kMatmulBestVersion);
  }
  return all_pass ? 0 : 1;
}
