// rope benchmark (memory-bound: GB/s of reading and writing q and k once).
#include "bench_support.hpp"
#include "inferlab/kernels/cuda/rope_cuda.hpp"
#include "inferlab/kernels/rope.hpp"

using namespace inferlab;
namespace k = inferlab::kernels;

int main() {
  const cuda::DeviceInfo dev = bench::start("rope");
  const int T = 512, Nh = 32, Nkv = 8, hs = 128, start_pos = 1000;
  const std::string name = "T=512 Nh=32 Nkv=8 hs=128";
  std::printf("-- %s, positions %d..%d\n", name.c_str(), start_pos, start_pos + T - 1);
  const auto q = bench::random_floats(std::size_t(T) * Nh * hs, -1, 1, 1);
  const auto kk = bench::random_floats(std::size_t(T) * Nkv * hs, -1, 1, 2);
  std::vector<int> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = start_pos + t;
  std::vector<float> want_q = q, want_k = kk;
  k::rope_ref(want_q.data(), want_k.data(), pos.data(), T, Nh, Nkv, hs, 10000.0f);
  cuda::DeviceBuffer<int> dpos(pos);
  bool all_pass = true;
  std::vector<bool> ok(k::rope_cuda_versions() + 1);
  for (int v = 1; v <= k::rope_cuda_versions(); ++v) {
    cuda::DeviceBuffer<float> dq(q), dk(kk);
    k::rope_cuda(v, dq.data(), dk.data(), dpos.data(), T, Nh, Nkv, hs, 10000.0f);
    ok[v] = bench::validate(name + " q", v, dq.to_host(), want_q, 1e-3, 1e-3) &&
            bench::validate(name + " k", v, dk.to_host(), want_k, 1e-3, 1e-3);
    all_pass = all_pass && ok[v];
  }
  bench::Best best;
  cuda::DeviceBuffer<float> dq(q), dk(kk);  // rotated again and again: same cost
  for (int v = 1; v <= k::rope_cuda_versions(); ++v) {
    if (!ok[v]) continue;
    const float ms = bench::time_ms(
        [&] { k::rope_cuda(v, dq.data(), dk.data(), dpos.data(), T, Nh, Nkv, hs, 10000.0f); });
    bench::report(dev, name, v, ms, 4.0 * 2.0 * T * (Nh + Nkv) * hs, bench::Unit::GBs, best);
  }
  bench::summary(dev, "rope " + name, best, bench::Unit::GBs, k::kRopeBestVersion);
  return all_pass ? 0 : 1;
}
