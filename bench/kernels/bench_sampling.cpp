// Device sampling benchmark: argmax over a vocabulary. It is latency-bound (one block); the
// point is that it costs microseconds and saves copying V floats to the host.
#include "bench_support.hpp"
#include "inferlab/kernels/cuda/sampling_cuda.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

int main() {
  const cuda::DeviceInfo dev = bench::start("sampling");
  bool all_pass = true;
  for (int n : {32000, 128256}) {
    const std::string name = "V=" + std::to_string(n);
    std::printf("-- %s\n", name.c_str());
    const auto logits = bench::random_floats(n, -6, 6, unsigned(n));
    cuda::DeviceBuffer<float> dl(logits);
    cuda::DeviceBuffer<int> out(1);
    bench::Best best_argmax;
    for (int v = 1; v <= k::argmax_cuda_versions(); ++v) {
      k::argmax_cuda(v, out.data(), dl.data(), n);
      const int got = out.to_host()[0], want = k::argmax_ref(logits.data(), n);
      std::printf("  %-28s v%d  %s  (got %d, want %d)\n", ("argmax " + name).c_str(), v,
                  got == want ? "PASS" : "FAIL", got, want);
      if (got != want) {
        all_pass = false;
        continue;
      }
      const float ms = bench::time_ms([&] { k::argmax_cuda(v, out.data(), dl.data(), n); });
      bench::report(dev, "argmax " + name, v, ms, 4.0 * n, bench::Unit::GBs, best_argmax);
    }
    bench::summary(dev, "argmax " + name, best_argmax, bench::Unit::GBs, k::kArgmaxBestVersion);
  }
  return all_pass ? 0 : 1;
}
