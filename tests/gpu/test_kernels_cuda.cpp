// Every version of every CUDA kernel against its CPU reference (_ref) over awkward shapes:
// 1, 31 and 33 (around a warp), 4097 (one past a power of two), 32001 (a vocabulary).
#include <cmath>
#include <sstream>

#include "gpu_test_support.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/cuda/attention_cuda.hpp"
#include "inferlab/kernels/cuda/matmul_cuda.hpp"
#include "inferlab/kernels/cuda/rmsnorm_cuda.hpp"
#include "inferlab/kernels/cuda/rope_cuda.hpp"
#include "inferlab/kernels/cuda/softmax_cuda.hpp"
#include "inferlab/kernels/cuda/swiglu_cuda.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/rmsnorm.hpp"
#include "inferlab/kernels/rope.hpp"
#include "inferlab/kernels/softmax.hpp"
#include "inferlab/kernels/swiglu.hpp"

using namespace inferlab;
using cuda::DeviceBuffer;
namespace k = inferlab::kernels;

namespace {

template <class... Args>
std::string label(const char* op, int version, Args... dims) {
  std::ostringstream s;
  s << op << " v" << version << " (";
  ((s << dims << ' '), ...);
  s << ')';
  return s.str();
}

}  // namespace

TEST_CASE("matmul: every CUDA version equals the reference", "[gpu][kernel][matmul]") {
  test::require_gpu();
  struct Shape {
    int T, n, d;
  };
  const Shape shapes[] = {{1, 1, 1},     {1, 4097, 33},  {33, 31, 32001}, {31, 33, 1},
                          {4, 64, 4097}, {33, 4097, 31}, {17, 16, 16},    {64, 256, 128}};
  for (const Shape& s : shapes) {
    // Integer-valued inputs: every partial sum is exact, so every version must match exactly
    // (whatever its summation order) and any indexing bug shows.
    const auto x = test::random_integers(std::size_t(s.T) * s.n, -2, 2, 1);
    const auto w = test::random_integers(std::size_t(s.d) * s.n, -2, 2, 2);
    std::vector<float> want(std::size_t(s.T) * s.d);
    k::matmul_ref(want.data(), x.data(), w.data(), s.T, s.n, s.d);
    DeviceBuffer<float> dx(x), dw(w), dy(want.size());
    for (int v = 1; v <= k::matmul_cuda_versions(); ++v) {
      dy.zero();
      k::matmul_cuda(v, dy.data(), dx.data(), dw.data(), s.T, s.n, s.d);
      CHECK(test::check_close(label("matmul", v, s.T, s.n, s.d), dy.to_host(), want, 0.0, 0.0));
    }
  }
  // Real-valued inputs: rounding differs by summation order, so a tolerance.
  const int T = 33, n = 4097, d = 33;
  const auto x = test::random_floats(std::size_t(T) * n, -1, 1, 3);
  const auto w = test::random_floats(std::size_t(d) * n, -1, 1, 4);
  std::vector<float> want(std::size_t(T) * d);
  k::matmul_ref(want.data(), x.data(), w.data(), T, n, d);
  DeviceBuffer<float> dx(x), dw(w), dy(want.size());
  for (int v = 1; v <= k::matmul_cuda_versions(); ++v) {
    k::matmul_cuda(v, dy.data(), dx.data(), dw.data(), T, n, d);
    CHECK(test::check_close(label("matmul real", v, T, n, d), dy.to_host(), want, 1e-3, 1e-3));
  }
  REQUIRE_THROWS_AS(k::matmul_cuda(0, dy.data(), dx.data(), dw.data(), T, n, d),
                    Error);
  REQUIRE_THROWS_AS(k::matmul_cuda(1, dy.data(), dx.data(), dw.data(), 0, n, d),
                    Error);
}

TEST_CASE("rmsnorm: every CUDA version matches the reference", "[gpu][kernel][rmsnorm]") {
  test::require_gpu();
  const int shapes[][2] = {{1, 1}, {1, 4097}, {31, 33}, {33, 31}, {4, 32001}, {4097, 1}};
  for (const auto& s : shapes) {
    const int T = s[0], n = s[1];
    const auto x = test::random_floats(std::size_t(T) * n, -3, 3, 5);
    const auto weight = test::random_floats(n, 0.5f, 1.5f, 6);
    std::vector<float> want(x.size());
    k::rmsnorm_ref(want.data(), x.data(), weight.data(), T, n, 1e-5f);
    DeviceBuffer<float> dx(x), dw(weight), dout(x.size());
    for (int v = 1; v <= k::rmsnorm_cuda_versions(); ++v) {
      k::rmsnorm_cuda(v, dout.data(), dx.data(), dw.data(), T, n, 1e-5f);
      CHECK(test::check_close(label("rmsnorm", v, T, n), dout.to_host(), want, 1e-5, 1e-4));
      // In place (out == x), as the forward pass may call it.
      DeviceBuffer<float> inplace(x);
      k::rmsnorm_cuda(v, inplace.data(), inplace.data(), dw.data(), T, n, 1e-5f);
      CHECK(test::check_close(label("rmsnorm in place", v, T, n), inplace.to_host(), want, 1e-5,
                              1e-4));
    }
  }
}

TEST_CASE("rope: every CUDA version matches the reference", "[gpu][kernel][rope]") {
  test::require_gpu();
  struct Shape {
    int T, n_heads, n_kv_heads, head_size, start_pos;
    float theta;
  };
  const Shape shapes[] = {{1, 1, 1, 2, 0, 10000.0f},
                          {31, 4, 2, 16, 4066, 10000.0f},
                          {33, 8, 8, 64, 0, 10000.0f},
                          {1, 32, 8, 128, 4096, 500000.0f},
                          {33, 3, 1, 6, 17, 10000.0f}};
  for (const Shape& s : shapes) {
    const std::size_t q_size = std::size_t(s.T) * s.n_heads * s.head_size;
    const std::size_t k_size = std::size_t(s.T) * s.n_kv_heads * s.head_size;
    const auto q = test::random_floats(q_size, -1, 1, 7);
    const auto kk = test::random_floats(k_size, -1, 1, 8);
    std::vector<int> pos(s.T);
    for (int t = 0; t < s.T; ++t) pos[t] = s.start_pos + t;
    std::vector<float> want_q = q, want_k = kk;
    k::rope_ref(want_q.data(), want_k.data(), pos.data(), s.T, s.n_heads, s.n_kv_heads, s.head_size,
                s.theta);
    DeviceBuffer<int> dpos(pos);
    for (int v = 1; v <= k::rope_cuda_versions(); ++v) {
      DeviceBuffer<float> dq(q), dk(kk);
      k::rope_cuda(v, dq.data(), dk.data(), dpos.data(), s.T, s.n_heads, s.n_kv_heads, s.head_size,
                   s.theta);
      // Angles reach thousands of radians: one ulp of difference between the CPU's and the
      // GPU's powf moves the angle by ~1e-4 rad at position 4096, hence atol 1e-3.
      const auto l = label("rope", v, s.T, s.n_heads, s.n_kv_heads, s.head_size, s.start_pos);
      CHECK(test::check_close(l + " q", dq.to_host(), want_q, 1e-3, 1e-3));
      CHECK(test::check_close(l + " k", dk.to_host(), want_k, 1e-3, 1e-3));
    }
  }
}

TEST_CASE("softmax: every CUDA version matches the reference", "[gpu][kernel][softmax]") {
  test::require_gpu();
  const int shapes[][2] = {{1, 1}, {1, 32001}, {31, 33}, {33, 4097}, {4097, 31}};
  for (const auto& s : shapes) {
    const int rows = s[0], n = s[1];
    const auto x = test::random_floats(std::size_t(rows) * n, -8, 8, 9);
    std::vector<float> want = x;
    k::softmax_ref(want.data(), rows, n);
    for (int v = 1; v <= k::softmax_cuda_versions(); ++v) {
      DeviceBuffer<float> dx(x);
      k::softmax_cuda(v, dx.data(), rows, n);
      CHECK(test::check_close(label("softmax", v, rows, n), dx.to_host(), want, 1e-7, 2e-4));
    }
  }
}

TEST_CASE("swiglu: every CUDA version matches the reference", "[gpu][kernel][swiglu]") {
  test::require_gpu();
  for (long n : {1L, 31L, 33L, 4097L, 32001L, (1L << 20) + 3}) {
    const auto gate = test::random_floats(n, -8, 8, 10);
    const auto up = test::random_floats(n, -2, 2, 11);
    std::vector<float> want(n);
    k::swiglu_ref(want.data(), gate.data(), up.data(), n);
    DeviceBuffer<float> dgate(gate), dup(up), dout(n);
    for (int v = 1; v <= k::swiglu_cuda_versions(); ++v) {
      k::swiglu_cuda(v, dout.data(), dgate.data(), dup.data(), n);
      CHECK(test::check_close(label("swiglu", v, n), dout.to_host(), want, 1e-6, 1e-5));
      DeviceBuffer<float> inplace(gate);  // out aliases gate, as in the forward pass
      k::swiglu_cuda(v, inplace.data(), inplace.data(), dup.data(), n);
      CHECK(test::check_close(label("swiglu in place", v, n), inplace.to_host(), want, 1e-6, 1e-5));
    }
  }
}

TEST_CASE("attention: every CUDA version matches the reference", "[gpu][kernel][attention]") {
  test::require_gpu();
  struct Shape {
    int T, n_heads, n_kv_heads, head_size, start_pos;
  };
  // Decode (T = 1) at long positions, prefill (T = 31, 33) from 0 and from the middle, GQA,
  // chunk boundaries of v2 (256 positions) crossed, odd head sizes.
  const Shape shapes[] = {{1, 1, 1, 1, 0},     {1, 8, 2, 64, 4096},  {31, 4, 4, 33, 0},
                          {33, 6, 2, 31, 240}, {31, 8, 1, 16, 4066}, {1, 4, 4, 8, 255},
                          {1, 4, 4, 8, 256}};
  for (const Shape& s : shapes) {
    const int S = s.start_pos + s.T;  // cache rows: every position up to the last token's
    const int q_dim = s.n_heads * s.head_size, kv_dim = s.n_kv_heads * s.head_size;
    const auto q = test::random_floats(std::size_t(s.T) * q_dim, -1, 1, 12);
    const auto kc = test::random_floats(std::size_t(S) * kv_dim, -1, 1, 13);
    const auto vc = test::random_floats(std::size_t(S) * kv_dim, -1, 1, 14);
    std::vector<int> pos(s.T);
    for (int t = 0; t < s.T; ++t) pos[t] = s.start_pos + t;
    std::vector<float> want(std::size_t(s.T) * q_dim);
    k::attention_ref(want.data(), q.data(), kc.data(), vc.data(), pos.data(), s.T, s.n_heads,
                     s.n_kv_heads, s.head_size);
    DeviceBuffer<float> dq(q), dk(kc), dv(vc), dout(want.size());
    DeviceBuffer<int> dpos(pos);
    const int max_pos = S - 1;
    for (int v = 1; v <= k::attention_cuda_versions(); ++v) {
      DeviceBuffer<float> ws(
          k::attention_cuda_workspace_floats(v, s.T, s.n_heads, s.head_size, max_pos));
      k::attention_cuda(v, dout.data(), dq.data(), dk.data(), dv.data(), dpos.data(), s.T,
                        s.n_heads, s.n_kv_heads, s.head_size, max_pos, ws.data(), ws.size());
      const auto l = label("attention", v, s.T, s.n_heads, s.n_kv_heads, s.head_size, s.start_pos);
      CHECK(test::check_close(l, dout.to_host(), want, 1e-5, 1e-3));
    }
  }
}

TEST_CASE("attention: a position beyond max_pos gives NaN, not an out-of-bounds read",
          "[gpu][kernel][attention]") {
  test::require_gpu();
  const int T = 1, Nh = 2, hs = 8, S = 8;
  DeviceBuffer<float> dq(test::random_floats(Nh * hs, -1, 1, 15));
  DeviceBuffer<float> dk(test::random_floats(S * Nh * hs, -1, 1, 16));
  DeviceBuffer<float> dv(test::random_floats(S * Nh * hs, -1, 1, 17));
  DeviceBuffer<int> dpos(std::vector<int>{7});
  DeviceBuffer<float> dout(Nh * hs);
  for (int v = 1; v <= k::attention_cuda_versions(); ++v) {
    const int max_pos = 3;  // the caller's bound is wrong: pos 7 > 3
    DeviceBuffer<float> ws(k::attention_cuda_workspace_floats(v, T, Nh, hs, max_pos));
    k::attention_cuda(v, dout.data(), dq.data(), dk.data(), dv.data(), dpos.data(), T, Nh, Nh, hs,
                      max_pos, ws.data(), ws.size());
    for (float x : dout.to_host()) CHECK(std::isnan(x));
  }
  // Version 2 refuses a missing workspace.
  REQUIRE_THROWS_AS(k::attention_cuda(2, dout.data(), dq.data(), dk.data(), dv.data(), dpos.data(),
                                      T, Nh, Nh, hs, 7, nullptr, 0),
                    Error);
  // Version 1 refuses, before any launch, a context whose scores exceed the device's shared
  // memory (a million positions: 4 MB of scores).
  const int too_long = 1 << 20;
  REQUIRE_THROWS_AS(k::attention_cuda(1, dout.data(), dq.data(), dk.data(), dv.data(), dpos.data(),
                                      T, Nh, Nh, hs, too_long, nullptr, 0),
                    Error);
  REQUIRE_THROWS_WITH(k::attention_cuda(1, dout.data(), dq.data(), dk.data(), dv.data(),
                                        dpos.data(), T, Nh, Nh, hs, too_long, nullptr, 0),
                      Catch::Contains("use version 2"));
}
