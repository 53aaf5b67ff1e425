// swiglu benchmark (memory-bound: 12 bytes per element).
#include "bench_support.hpp"
#include "inferlab/kernels/cuda/swiglu_cuda.hpp"
#include "inferlab/kernels/swiglu.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

int main() {
  const cuda::DeviceInfo dev = bench::start("swiglu");
  const long n = 512L * 11008;
  const std::string name = "n=512*11008";
  std::printf("-- %s\n", name.c_str());
  const auto gate = bench::random_floats(n, -8, 8, 1);
  const auto up = bench::random_floats(n, -2, 2, 2);
  std::vector<float> want(n);
  k::swiglu_ref(want.data(), gate.data(), up.data(), n);
  cuda::DeviceBuffer<float> dgate(gate), dup(up), dout(n);
  bool all_pass = true;
  std::vector<bool> ok(k::swiglu_cuda_versions() + 1);
  for (int v = 1; v <= k::swiglu_cuda_versions(); ++v) {
    k::swiglu_cuda(v, dout.data(), dgate.data(), dup.data(), n);
    ok[v] = bench::validate(name, v, dout.to_host(), want, 1e-6, 1e-5);
    all_pass = all_pass && ok[v];
  }
  bench::Best best;
  for (int v = 1; v <= k::swiglu_cuda_versions(); ++v) {
    if (!ok[v]) continue;
    const float ms =
        bench::time_ms([&] { k::swiglu_cuda(v, dout.data(), dgate.data(), dup.data(), n); });
    bench::report(dev, name, v, ms, 12.0 * n, bench::Unit::GBs, best);
  }
  bench::summary(dev, "swiglu " + name, best, bench::Unit::GBs, k::kSwigluBestVersion);
  return all_pass ? 0 : 1;
}
