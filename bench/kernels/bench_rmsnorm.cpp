// rmsnorm benchmark (memory-bound: GB/s of one read and one write of x).
#include "bench_support.hpp"
#include "inferlab/kernels/cuda/rmsnorm_cuda.hpp"
#include "inferlab/kernels/rmsnorm.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

int main() {
  const cuda::DeviceInfo dev = bench::start("rmsnorm");
  bool all_pass = true;
  const int shapes[][2] = {{1, 4096}, {512, 4096}};
  for (const auto& s : shapes) {
    const int T = s[0], n = s[1];
    const std::string name = "T=" + std::to_string(T) + " n=" + std::to_string(n);
    std::printf("-- %s\n", name.c_str());
    const auto x = bench::random_floats(std::size_t(T) * n, -3, 3, 1);
    const auto weight = bench::random_floats(n, 0.5f, 1.5f, 2);
    std::vector<float> want(x.size());
    k::rmsnorm_ref(want.data(), x.data(), weight.data(), T, n, 1e-5f);
    cuda::DeviceBuffer<float> dx(x), dw(weight), dout(x.size());
    std::vector<bool> ok(k::rmsnorm_cuda_versions() + 1);
    for (int v = 1; v <= k::rmsnorm_cuda_versions(); ++v) {
      k::rmsnorm_cuda(v, dout.data(), dx.data(), dw.data(), T, n, 1e-5f);
      ok[v] = bench::validate(name, v, dout.to_host(), want, 1e-5, 1e-4);
      all_pass = all_pass && ok[v];
    }
    bench::Best best;
    for (int v = 1; v <= k::rmsnorm_cuda_versions(); ++v) {
      if (!ok[v]) continue;
      const float ms = bench::time_ms(
          [&] { k::rmsnorm_cuda(v, dout.data(), dx.data(), dw.data(), T, n, 1e-5f); });
      bench::report(dev, name, v, ms, 4.0 * (2.0 * T * n + n), bench::Unit::GBs, best);
    }
    bench::summary(dev, "rmsnorm " + name, best, bench::Unit::GBs, k::kRmsnormBestVersion);
  }
  return all_pass ? 0 : 1;
}
