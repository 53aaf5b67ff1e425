// Every CPU kernel against its plain-loop reference, over awkward shapes.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/error.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/rmsnorm.hpp"
#include "inferlab/kernels/rope.hpp"
#include "inferlab/kernels/softmax.hpp"
#include "inferlab/kernels/swiglu.hpp"
#include "test_support.hpp"

using namespace inferlab::kernels;
using inferlab::Error;
using inferlab::test::all_close;

namespace {

std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                 float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Small integers: every product and partial sum is exact in float32, so any summation order
// gives the same bits and the comparison can be exact (the CUTLASS examples' trick).
std::vector<float> integer_vector(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-2, 2);
  std::vector<float> v(n);
  for (float& x : v) x = float(dist(rng));
  return v;
}

#define REQUIRE_CLOSE(actual, expected, n, atol, rtol)                                            \
  do {                                                                                            \
    const auto report_ = all_close(actual, expected, long(n), atol, rtol);                        \
    INFO("max abs error " << report_.max_abs_err << ", first mismatch at " << report_.first_bad); \
    REQUIRE(report_.ok);                                                                          \
  } while (0)

}  // namespace

TEST_CASE("every CPU matmul version equals the reference exactly on integer inputs",
          "[unit][kernel]") {
  const int shapes[][3] = {{1, 1, 1},    {1, 31, 33},  {3, 33, 31},   {5, 4097, 7}, {1, 64, 32001},
                           {37, 64, 96}, {4, 172, 64}, {64, 288, 33}, {13, 48, 5},  {2, 17, 2}};
  for (int v = 1; v <= matmul_cpu_versions(); ++v) {
    for (const auto& s : shapes) {
      const int T = s[0], n = s[1], d = s[2];
      INFO("version " << v << " T=" << T << " n=" << n << " d=" << d);
      const auto x = integer_vector(std::size_t(T) * n, 1 + T);
      const auto w = integer_vector(std::size_t(d) * n, 2 + n);
      std::vector<float> y(std::size_t(T) * d, NAN), ref(std::size_t(T) * d, NAN);
      matmul_ref(ref.data(), x.data(), w.data(), T, n, d);
      matmul_cpu_version(v, y.data(), x.data(), w.data(), T, n, d);
      REQUIRE_CLOSE(y, ref, y.size(), 0.0, 0.0);
    }
  }
}

TEST_CASE("every CPU matmul version matches the reference on random floats", "[unit][kernel]") {
  const int T = 9, n = 4097, d = 33;
  const auto x = random_vector(std::size_t(T) * n, 3);
  const auto w = random_vector(std::size_t(d) * n, 4);
  std::vector<float> ref(std::size_t(T) * d);
  matmul_ref(ref.data(), x.data(), w.data(), T, n, d);
  for (int v = 1; v <= matmul_cpu_versions(); ++v) {
    INFO("version " << v);
    std::vector<float> y(std::size_t(T) * d, NAN);
    matmul_cpu_version(v, y.data(), x.data(), w.data(), T, n, d);
    REQUIRE_CLOSE(y, ref, y.size(), 1e-4, 1e-4);
  }
}

TEST_CASE("CPU matmul is batch invariant: a token's row has the same bits alone or batched",
          "[unit][kernel]") {
  // n = 300: a 16-wide body and a tail of 12; d = 70: partial row groups at the edge. T covers
  // every partial token panel and enough tokens for several panels and threads.
  const int n = 300, d = 70;
  const auto w = random_vector(std::size_t(d) * n, 5);
  for (int v = 1; v <= matmul_cpu_versions(); ++v) {
    for (int T : {2, 3, 4, 5, 6, 7, 11, 13, 33, 70}) {
      const auto x = random_vector(std::size_t(T) * n, 6 + T);
      std::vector<float> batched(std::size_t(T) * d);
      matmul_cpu_version(v, batched.data(), x.data(), w.data(), T, n, d);
      for (int t = 0; t < T; ++t) {
        std::vector<float> alone(d);
        matmul_cpu_version(v, alone.data(), x.data() + std::size_t(t) * n, w.data(), 1, n, d);
        INFO("version " << v << " T=" << T << " t=" << t);
        REQUIRE(std::memcmp(alone.data(), batched.data() + std::size_t(t) * d, d * sizeof(float)) ==
                0);
      }
    }
  }
}

TEST_CASE("CPU matmul versions 1 and 2 share one summation order: identical bits",
          "[unit][kernel]") {
  // Large enough for the blocked version to use several row blocks, several token blocks
  // (n = 2048: 30 tokens per block), both threads and the parallel path.
  const int shapes[][3] = {{19, 1000, 131}, {70, 2048, 37}};
  for (const auto& shape : shapes) {
    const int T = shape[0], n = shape[1], d = shape[2];
    INFO("T=" << T << " n=" << n << " d=" << d);
    const auto x = random_vector(std::size_t(T) * n, 11);
    const auto w = random_vector(std::size_t(d) * n, 12);
    std::vector<float> first(std::size_t(T) * d);
    matmul_cpu_version(1, first.data(), x.data(), w.data(), T, n, d);
    std::vector<float> y(first.size());
    matmul_cpu_version(2, y.data(), x.data(), w.data(), T, n, d);
    REQUIRE(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0);
    std::vector<float> best(first.size()), last(d);
    matmul_cpu(best.data(), x.data(), w.data(), T, n, d);
    REQUIRE(std::memcmp(best.data(), first.data(), best.size() * sizeof(float)) == 0);
    // The last token (in the last token block), alone.
    matmul_cpu(last.data(), x.data() + std::size_t(T - 1) * n, w.data(), 1, n, d);
    REQUIRE(std::memcmp(last.data(), first.data() + std::size_t(T - 1) * d, d * sizeof(float)) ==
            0);
  }
}

namespace {

// The order matmul_packed promises (matmul.hpp): one chain of multiply-adds from i = 0, fused
// where the build targets an FMA instruction, a rounded multiply and an add where it does not.
// Written independently of the kernel: a scalar loop over plain row-major arrays.
float chain_dot(const float* w, const float* x, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) {
#if defined(__FMA__)
    acc = std::fma(w[i], x[i], acc);
#else
    const float product = w[i] * x[i];
    acc = acc + product;
#endif
  }
  return acc;
}

}  // namespace

TEST_CASE("matmul_packed: every output is one multiply-add chain in increasing i, bit for bit",
          "[unit][kernel]") {
  // d: below, at and across the 16-row panels (partial last panels); n: shorter than, equal to
  // and longer than one 512-column step, and across 1024-column chunks (2048); T: partial token
  // groups, several token blocks (n = 2048 holds 60 tokens per block: 70 go as 36 + 34) and the
  // parallel path; one token in parallel too (decode: each thread walks its slice of panels two
  // at a time, with and without a partial last panel; the shapes above of one token are too
  // small to go parallel). 1 and 2 threads.
  const int shapes[][3] = {{1, 1, 1},      {3, 7, 5},      {6, 300, 16},   {13, 256, 33},
                           {7, 600, 70},   {1, 768, 70},   {70, 2048, 37}, {40, 512, 520},
                           {1, 2048, 100}, {1, 1024, 1000}, {1, 640, 1024}};
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (const auto& shape : shapes) {
      const int T = shape[0], n = shape[1], d = shape[2];
      INFO("threads " << threads << ", T=" << T << " n=" << n << " d=" << d);
      const auto x = random_vector(std::size_t(T) * n, 21 + n);
      const auto w = random_vector(std::size_t(d) * n, 22 + d);
      const PackedMatrix packed(w.data(), n, d);
      REQUIRE(packed.panels() == (d + 15) / 16);
      std::vector<float> y(std::size_t(T) * d + 1, NAN);
      y.back() = 12345.0f;  // a guard: nothing may be written past the last row
      matmul_packed(y.data(), x.data(), packed, T);
      REQUIRE(y.back() == 12345.0f);
      for (int t = 0; t < T; ++t) {
        for (int o = 0; o < d; ++o) {
          const float want =
              chain_dot(w.data() + std::size_t(o) * n, x.data() + std::size_t(t) * n, n);
          const float got = y[std::size_t(t) * d + o];
          INFO("t=" << t << " o=" << o);
          REQUIRE(std::memcmp(&got, &want, sizeof(float)) == 0);
        }
      }
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("PackedMatrix and matmul_packed refuse what they cannot run", "[unit][kernel]") {
  const float w[4] = {1, 2, 3, 4};
  REQUIRE_THROWS_WITH(PackedMatrix(nullptr, 2, 2), Catch::Contains("n >= 1 and d >= 1"));
  REQUIRE_THROWS_AS(PackedMatrix(w, 0, 2), Error);
  REQUIRE_THROWS_AS(PackedMatrix(w, 2, -1), Error);
  float y[2], x[2] = {1, 1};
  REQUIRE_THROWS_WITH(matmul_packed(y, x, PackedMatrix(), 1), Catch::Contains("empty"));
  // The padding rows of the last panel are zeros, the real rows the weights, column by column.
  const PackedMatrix p(w, 2, 2);
  REQUIRE(p.panel(0)[0] == 1.0f);
  REQUIRE(p.panel(0)[1] == 3.0f);
  REQUIRE(p.panel(0)[2] == 0.0f);
  REQUIRE(p.panel(0)[16] == 2.0f);
  REQUIRE(p.panel(0)[17] == 4.0f);
  REQUIRE(p.bytes() == 2 * 16 * sizeof(float));
}

TEST_CASE("matmul_cpu_version rejects an unknown version", "[unit][kernel]") {
  float y = 0.0f;
  const float x = 1.0f, w = 1.0f;
  REQUIRE_THROWS_WITH(matmul_cpu_version(0, &y, &x, &w, 1, 1, 1),
                      Catch::Contains("version 0 outside 1.."));
  REQUIRE_THROWS_AS(matmul_cpu_version(matmul_cpu_versions() + 1, &y, &x, &w, 1, 1, 1), Error);
}

TEST_CASE("softmax_exp is within 2e-7 relative of exp on [-87, 0] and clamps below",
          "[unit][kernel]") {
  double worst = 0.0;
  float worst_x = 0.0f;
  // A dense sweep (every 1e-4) plus the end points and exact multiples of ln 2, where the
  // range reduction switches from one power of two to the next.
  std::vector<float> xs;
  for (int i = 0; i <= 870000; ++i) xs.push_back(-float(i) * 1e-4f);
  for (int k = 0; k <= 125; ++k) xs.push_back(-float(k) * 0.69314718f);
  xs.push_back(-87.0f);
  for (float x : xs) {
    const double want = std::exp(double(x));
    const double rel = std::fabs(double(softmax_exp(x)) - want) / want;
    if (rel > worst) {
      worst = rel;
      worst_x = x;
    }
  }
  INFO("worst relative error " << worst << " at x = " << worst_x);
  REQUIRE(worst < 2e-7);
  CHECK(softmax_exp(0.0f) == 1.0f);
  CHECK(softmax_exp(-1000.0f) == softmax_exp(-87.0f));
  CHECK(softmax_exp(-INFINITY) == softmax_exp(-87.0f));
}

TEST_CASE("rmsnorm_cpu matches the reference and the definition", "[unit][kernel]") {
  for (int n : {1, 31, 33, 4097}) {
    const int T = 3;
    const auto x = random_vector(std::size_t(T) * n, 7 + n);
    const auto w = random_vector(n, 8, 0.5f, 1.5f);
    std::vector<float> ref(x.size()), out(x.size());
    rmsnorm_ref(ref.data(), x.data(), w.data(), T, n, 1e-5f);
    rmsnorm_cpu(out.data(), x.data(), w.data(), T, n, 1e-5f);
    INFO("n=" << n);
    REQUIRE_CLOSE(out, ref, out.size(), 1e-5, 1e-4);
  }
  // Definition on a hand-computed case: x = (3, 4), mean square 12.5, w = (1, 2).
  const float x[2] = {3.0f, 4.0f}, w[2] = {1.0f, 2.0f};
  float out[2];
  rmsnorm_cpu(out, x, w, 1, 2, 0.0f);
  CHECK(out[0] == Approx(3.0 / std::sqrt(12.5)));
  CHECK(out[1] == Approx(8.0 / std::sqrt(12.5)));
}

TEST_CASE("rope_cpu matches the reference, and position 0 is the identity", "[unit][kernel]") {
  const int T = 5, Nh = 8, Nkv = 4, hs = 8;
  auto q = random_vector(std::size_t(T) * Nh * hs, 9);
  auto k = random_vector(std::size_t(T) * Nkv * hs, 10);
  auto q_ref = q, k_ref = k;
  const int pos[T] = {0, 1, 17, 255, 4096};
  rope_ref(q_ref.data(), k_ref.data(), pos, T, Nh, Nkv, hs, 10000.0f);
  rope_cpu(q.data(), k.data(), pos, T, Nh, Nkv, hs, 10000.0f);
  REQUIRE_CLOSE(q, q_ref, q.size(), 1e-4, 1e-4);
  REQUIRE_CLOSE(k, k_ref, k.size(), 1e-4, 1e-4);
  // Rotation at position 0 changes nothing, and a rotation preserves each pair's length.
  auto q0 = random_vector(std::size_t(Nh) * hs, 11), k0 = random_vector(std::size_t(Nkv) * hs, 12);
  auto q0_copy = q0;
  const int zero = 0;
  rope_cpu(q0.data(), k0.data(), &zero, 1, Nh, Nkv, hs, 10000.0f);
  REQUIRE(q0 == q0_copy);
  // Pair 0 of a head rotates by exactly `pos` radians (frequency 1).
  float qa[2] = {1.0f, 0.0f}, ka[2] = {0.0f, 1.0f};
  const int p3 = 3;
  rope_cpu(qa, ka, &p3, 1, 1, 1, 2, 10000.0f);
  CHECK(qa[0] == Approx(std::cos(3.0)).margin(1e-6));
  CHECK(qa[1] == Approx(std::sin(3.0)).margin(1e-6));
  CHECK(ka[0] == Approx(-std::sin(3.0)).margin(1e-6));
}

TEST_CASE("softmax_cpu matches the reference, sums to one, survives large logits",
          "[unit][kernel]") {
  for (int n : {1, 31, 33, 4097, 32001}) {
    auto x = random_vector(std::size_t(2) * n, 13 + n, -20.0f, 20.0f);
    auto ref = x;
    softmax_ref(ref.data(), 2, n);
    softmax_cpu(x.data(), 2, n);
    INFO("n=" << n);
    REQUIRE_CLOSE(x, ref, x.size(), 1e-6, 1e-4);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += x[i];
    CHECK(sum == Approx(1.0).epsilon(1e-5));
  }
  float big[3] = {1000.0f, 1000.0f, -1000.0f};
  softmax_cpu(big, 1, 3);
  CHECK(big[0] == Approx(0.5));
  CHECK(big[2] == 0.0f);
}

TEST_CASE("swiglu_cpu matches the reference and silu's definition", "[unit][kernel]") {
  for (long n : {1L, 31L, 33L, 4097L, 200001L}) {
    const auto g = random_vector(n, 14, -8.0f, 8.0f), u = random_vector(n, 15);
    std::vector<float> out(n), ref(n);
    swiglu_ref(ref.data(), g.data(), u.data(), n);
    swiglu_cpu(out.data(), g.data(), u.data(), n);
    REQUIRE_CLOSE(out, ref, n, 1e-6, 1e-5);
  }
  const float g = 2.0f, u = 3.0f;
  float out;
  swiglu_cpu(&out, &g, &u, 1);
  CHECK(out == Approx(2.0 / (1.0 + std::exp(-2.0)) * 3.0));
  // Far into both tails, and zeros of either sign, against silu in double precision.
  const std::vector<float> gs = {-200.0f, -90.0f, -87.0f, -20.0f, -1e-30f, -0.0f,
                                 0.0f,    1e-30f, 20.0f,  87.0f,  90.0f,   200.0f};
  std::vector<float> ones(gs.size(), 1.0f), outs(gs.size());
  swiglu_cpu(outs.data(), gs.data(), ones.data(), long(gs.size()));
  for (std::size_t i = 0; i < gs.size(); ++i) {
    const double want = double(gs[i]) / (1.0 + std::exp(-double(gs[i])));
    INFO("g = " << gs[i]);
    CHECK(std::fabs(outs[i] - want) <= 1e-30 + 1e-6 * std::fabs(want));
  }
  // An element alone has the bits it has inside a long (vectorised, threaded) call: the
  // forward pass's batch invariance relies on it.
  const long big = 100003;
  const auto g2 = random_vector(big, 16, -30.0f, 30.0f), u2 = random_vector(big, 17);
  std::vector<float> all(big);
  swiglu_cpu(all.data(), g2.data(), u2.data(), big);
  for (long i : {0L, 1L, 7L, 8L, 4095L, 50001L, 99999L, big - 1}) {
    float alone;
    swiglu_cpu(&alone, &g2[i], &u2[i], 1);
    INFO("element " << i);
    CHECK(std::memcmp(&alone, &all[i], sizeof alone) == 0);
  }
}

TEST_CASE("attention_cpu matches the reference (GQA, mixed positions)", "[unit][kernel]") {
  const int S = 70, Nh = 8, Nkv = 2, hs = 16, KV = Nkv * hs;
  const auto kc = random_vector(std::size_t(S) * KV, 16),
             vc = random_vector(std::size_t(S) * KV, 17);
  const int T = 4;
  const int pos[T] = {0, 1, 33, 69};
  const auto q = random_vector(std::size_t(T) * Nh * hs, 18);
  std::vector<float> out(q.size()), ref(q.size());
  attention_ref(ref.data(), q.data(), kc.data(), vc.data(), pos, T, Nh, Nkv, hs);
  attention_cpu(out.data(), q.data(), kc.data(), vc.data(), pos, T, Nh, Nkv, hs);
  REQUIRE_CLOSE(out, ref, out.size(), 1e-5, 1e-4);
  // At position 0 a head can only attend to itself: the output is its KV head's value row.
  for (int h = 0; h < Nh; ++h) {
    const int kvh = h / (Nh / Nkv);
    for (int i = 0; i < hs; ++i) CHECK(out[h * hs + i] == Approx(vc[kvh * hs + i]));
  }
}
