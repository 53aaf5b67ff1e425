// softmax benchmark (memory-bound: GB/s counting one read and one write of x; the kernels
// actually read it more than once, which is what the percentage of peak exposes).
#include "bench_support.hpp"
#include "inferlab/kernels/cuda/softmax_cuda.hpp"
#include "inferlab/kernels/softmax.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

int main() {
  const cuda::DeviceInfo dev = bench::start("softmax");
  bool all_pass = true;
  const int shapes[][2] = {{1, 32000}, {1024, 4096}};
  for (const auto& s : shapes) {
    const int rows = s[0], n = s[1];
    const std::string name = "rows=" + std::to_string(rows) + " n=" + std::to_string(n);
    std::printf("-- %s\n", name.c_str());
    const auto x = bench::random_floats(std::size_t(rows) * n, -8, 8, 1);
    std::vector<float> want = x;
    k::softmax_ref(want.data(), rows, n);
    std::vector<bool> ok(k::softmax_cuda_versions() + 1);
    for (int v = 1; v <= k::softmax_cuda_versions(); ++v) {
      cuda::DeviceBuffer<float> dx(x);
      k::softmax_cuda(v, dx.data(), rows, n);
      ok[v] = bench::validate(name, v, dx.to_host(), want, 1e-7, 2e-4);
      all_pass = all_pass && ok[v];
    }
    bench::Best best;
    cuda::DeviceBuffer<float> dx(x);  // softmax of a softmax is still finite: same cost
    for (int v = 1; v <= k::softmax_cuda_versions(); ++v) {
      if (!ok[v]) continue;
      const float ms = bench::time_ms([&] { k::softmax_cuda(v, dx.data(), rows, n); });
      bench::report(dev, name, v, ms, 4.0 * 2.0 * rows * double(n), bench::Unit::GBs, best);
    }
    bench::summary(dev, "softmax " + name, best, bench::Unit::GBs, k::kSoftmaxBestVersion);
  }
  return all_pass ? 0 : 1;
}
