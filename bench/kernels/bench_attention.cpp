// Decode attention benchmark (T = 1 over a long cache; memory-bound: GB/s of the keys and
// values read). The lesson: v1 launches only Nh blocks, v2 splits the context across SMs.
#include "bench_support.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/cuda/attention_cuda.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

namespace {
struct Case {
  int Nh, Nkv, hs, S;
};
}  // namespace

int main() {
  const cuda::DeviceInfo dev = bench::start("attention");
  const Case cases[] = {{32, 32, 128, 4096}, {32, 8, 128, 8192}};
  bool all_pass = true;
  for (const Case& c : cases) {
    const int T = 1, pos0 = c.S - 1;
    const std::string name = "decode Nh=" + std::to_string(c.Nh) + " Nkv=" + std::to_string(c.Nkv) +
                             " S=" + std::to_string(c.S);
    std::printf("-- %s hs=%d\n", name.c_str(), c.hs);
    const int q_dim = c.Nh * c.hs, kv_dim = c.Nkv * c.hs;
    const auto q = bench::random_floats(q_dim, -1, 1, 1);
    const auto kc = bench::random_floats(std::size_t(c.S) * kv_dim, -1, 1, 2);
    const auto vc = bench::random_floats(std::size_t(c.S) * kv_dim, -1, 1, 3);
    std::vector<float> want(q_dim);
    k::attention_ref(want.data(), q.data(), kc.data(), vc.data(), &pos0, T, c.Nh, c.Nkv, c.hs);
    cuda::DeviceBuffer<float> dq(q), dk(kc), dv(vc), dout(q_dim);
    cuda::DeviceBuffer<int> dpos(std::vector<int>{pos0});
    std::vector<bool> ok(k::attention_cuda_versions() + 1);
    std::vector<cuda::DeviceBuffer<float>> ws(k::attention_cuda_versions() + 1);
    auto run = [&](int v) {
      k::attention_cuda(v, dout.data(), dq.data(), dk.data(), dv.data(), dpos.data(), T, c.Nh,
                        c.Nkv, c.hs, pos0, ws[v].data(), ws[v].size());
    };
    for (int v = 1; v <= k::attention_cuda_versions(); ++v) {
      ws[v] = cuda::DeviceBuffer<float>(k::attention_cuda_workspace_floats(v, T, c.Nh, c.hs, pos0));
      run(v);
      ok[v] = bench::validate(name, v, dout.to_host(), want, 1e-5, 1e-3);
      all_pass = all_pass && ok[v];
    }
    bench::Best best;
    const double bytes = 4.0 * (2.0 * c.S * kv_dim + 2.0 * q_dim);
    for (int v = 1; v <= k::attention_cuda_versions(); ++v) {
      if (!ok[v]) continue;
      const float ms = bench::time_ms([&] { run(v); });
      bench::report(dev, name, v, ms, bytes, bench::Unit::GBs, best);
    }
    bench::summary(dev, "attention " + name, best, bench::Unit::GBs, k::kAttentionBestVersion);
  }
  return all_pass ? 0 : 1;
}
