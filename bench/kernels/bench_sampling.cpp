// Device sampling benchmark: argmax and top-p over a vocabulary. These are latency-bound
// (one block); the point is that they cost microseconds and save copying V floats to the host.
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
    bench::Best best_argmax, best_top_p;
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
    for (int v = 1; v <= k::top_p_sample_cuda_versions(); ++v) {
      bool ok = true;
      for (float u : {0.1f, 0.5f, 0.9f}) {
        k::top_p_sample_cuda(v, out.data(), dl.data(), n, 1.0f, 0.9f, u);
        const int got = out.to_host()[0];
        // A draw within round-off of a CDF boundary may land on either side: accept the
        // reference's choice at u +- 1e-4 as well.
        const bool pass = got == k::top_p_sample_ref(logits.data(), n, 1.0f, 0.9f, u) ||
                          got == k::top_p_sample_ref(logits.data(), n, 1.0f, 0.9f, u - 1e-4f) ||
                          got == k::top_p_sample_ref(logits.data(), n, 1.0f, 0.9f, u + 1e-4f);
        ok = ok && pass;
      }
      std::printf("  %-28s v%d  %s\n", ("top-p 0.9 " + name).c_str(), v, ok ? "PASS" : "FAIL");
      if (!ok) {
        all_pass = false;
        continue;
      }
      const float ms = bench::time_ms(
          [&] { k::top_p_sample_cuda(v, out.data(), dl.data(), n, 1.0f, 0.9f, 0.5f); });
      bench::report(dev, "top-p 0.9 " + name, v, ms, 4.0 * n, bench::Unit::GBs, best_top_p);
    }
    bench::summary(dev, "argmax " + name, best_argmax, bench::Unit::GBs, k::kArgmaxBestVersion);
    bench::summary(dev, "top-p " + name, best_top_p, bench::Unit::GBs, k::kTopPSampleBestVersion);
  }
  return all_pass ? 0 : 1;
}
