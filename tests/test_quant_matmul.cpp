// The quantized matmul ladder (quant_matmul.hpp): rung 1 against float matmul_ref on the
// dequantized weights, rungs 2 and 3 against rung 1 within the activation-rounding bound (F16
// and BF16, whose activations stay float: within the bound of a float sum in another order),
// the same bits on every instruction set and for every batch (batch invariance), NaN and
// infinity as rung 1 (F16, BF16), and refusals.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/kernels/quant_matmul.hpp"
#include "test_support.hpp"

using namespace inferlab;
using Catch::Matchers::Contains;
using kernels::QuantIsa;
using kernels::QuantMatrix;
using kernels::TensorType;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> run(int version, QuantIsa isa, const std::vector<float>& x,
                       const QuantMatrix& w, int T) {
  std::vector<float> y(std::size_t(T) * std::size_t(w.d()), NAN);
  kernels::matmul_quant_version(version, isa, y.data(), x.data(), w, T);
  return y;
}

// The activations' block of rungs 2 and 3 for weights of type: the weight block (32, or 256
// for the K-quants, whose activations come in super-blocks of 256), at least 32.
int activation_block(TensorType type) {
  return int(std::max<std::size_t>(32, kernels::block_elements(type)));
}

// The bound of rungs 2 and 3 against rung 1: each activation moves by at most half a step of
// its block of `block` numbers (amax / 254), so an output moves by at most sum over blocks of
// (sum_i |w[o, i]|) * amax_block / 254; plus float rounding, relative to sum_i |w x|.
double integer_bound(const std::vector<float>& wf, const float* x, int n, int o, int block) {
  double bound = 0.0, magnitude = 0.0;
  for (int b = 0; b < n / block; ++b) {
    double amax = 0.0, wsum = 0.0;
    for (int j = block * b; j < block * b + block; ++j) {
      amax = std::max(amax, double(std::fabs(x[j])));
      wsum += std::fabs(wf[std::size_t(o) * n + j]);
      magnitude += std::fabs(wf[std::size_t(o) * n + j] * x[j]);
    }
    bound += wsum * amax / 254.0;
  }
  return bound * 1.001 + 1e-5 * magnitude + 1e-6;
}

// Two float sums of the same n products in different orders: they differ by at most about
// 2 n eps times the sum of |w x| (the usual accumulation bound), whatever the compiler's
// contraction and vectorisation (a debug build sums in another order).
double sum_bound(const std::vector<float>& wf, const float* x, int n, int o) {
  double magnitude = 0.0;
  for (int i = 0; i < n; ++i) magnitude += std::fabs(double(wf[std::size_t(o) * n + i]) * x[i]);
  return 2.0 * n * 1.19209290e-7 * magnitude + 1e-6;
}

// F16 and BF16: rungs 2 and 3 keep the activations in float.
bool float_activations(TensorType type) {
  return type == TensorType::kF16 || type == TensorType::kBF16;
}

// The bound of rungs 2 and 3 against rung 1 for weights of type.
double rung2_bound(TensorType type, const std::vector<float>& wf, const float* x, int n, int o) {
  return float_activations(type) ? sum_bound(wf, x, n, o)
                                 : integer_bound(wf, x, n, o, activation_block(type));
}

std::vector<QuantIsa> supported_isas() {
  std::vector<QuantIsa> isas = {QuantIsa::scalar};
  for (QuantIsa isa : {QuantIsa::avx2, QuantIsa::avx512_vnni})
    if (kernels::quant_isa_supported(isa)) isas.push_back(isa);
  return isas;
}

// Every rung of one format on one (n, d) shape, for T = 1, 3, 5, 9: rung 1 against
// matmul_ref, rung 2 against rung 1 within rung2_bound, rungs 2 and 3 the same bits on
// every instruction set, and the last token alone the bits it has in the batch.
void check_ladder(TensorType type, int n, int d, const std::vector<QuantIsa>& isas) {
  const std::vector<float> wsrc = random_floats(std::size_t(n) * d, unsigned(n + d));
  const QuantMatrix w = QuantMatrix::quantize(type, wsrc.data(), n, d);
  REQUIRE(w.bytes() == kernels::tensor_bytes(type, std::size_t(n) * d));
  std::vector<float> wf(std::size_t(n) * d);
  for (int o = 0; o < d; ++o) w.dequantize_row(o, wf.data() + std::size_t(o) * n);
  for (int T : {1, 3, 5, 9}) {
    CAPTURE(kernels::ggml_type_name(std::uint32_t(type)), n, d, T);
    const std::vector<float> x = random_floats(std::size_t(T) * n, unsigned(7 * T + n));
    std::vector<float> want(std::size_t(T) * d);
    kernels::matmul_ref(want.data(), x.data(), wf.data(), T, n, d);
    // Rung 1: float dot products of the dequantized rows.
    const std::vector<float> ref = run(1, QuantIsa::scalar, x, w, T);
    int bad = 0;
    double worst = 0.0;
    for (int t = 0; t < T; ++t) {
      for (int o = 0; o < d; ++o) {
        const double err = std::fabs(double(ref[std::size_t(t) * d + o]) -
                                     double(want[std::size_t(t) * d + o]));
        worst = std::max(worst, err);
        if (err > sum_bound(wf, x.data() + std::size_t(t) * n, n, o)) ++bad;
      }
    }
    INFO("rung 1 vs matmul_ref: max error " << worst);
    CHECK(bad == 0);
    // Rungs 2 and 3 on every instruction set: one set of bits, within the bound of rung 1.
    const std::vector<float> first = run(2, QuantIsa::scalar, x, w, T);
    for (int t = 0; t < T; ++t) {
      for (int o = 0; o < d; ++o) {
        const std::size_t i = std::size_t(t) * d + std::size_t(o);
        const double bound = rung2_bound(type, wf, x.data() + std::size_t(t) * n, n, o);
        if (!(std::fabs(first[i] - ref[i]) <= bound)) {
          FAIL_CHECK("token " << t << " row " << o << ": rung 2 " << first[i] << ", rung 1 "
                              << ref[i] << ", bound " << bound);
        }
      }
    }
    for (QuantIsa isa : isas) {
      for (int version : {2, 3}) {
        CAPTURE(kernels::quant_isa_name(isa), version);
        const std::vector<float> y = run(version, isa, x, w, T);
        CHECK(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0);
      }
    }
    // Batch invariance: the last token alone gives the bits it has in the batch.
    const std::vector<float> last(x.end() - n, x.end());
    const std::vector<float> alone = run(3, kernels::quant_isa_best(), last, w, 1);
    CHECK(std::memcmp(alone.data(), first.data() + std::size_t(T - 1) * d,
                      std::size_t(d) * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("quantized matmul: every rung, every instruction set, awkward shapes",
          "[kernel][quant]") {
  const TensorType types[] = {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                              TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kF16,
                              TensorType::kBF16};
  const int shapes[][2] = {{32, 1}, {64, 31}, {96, 33}, {4096, 17}};
  const std::vector<QuantIsa> isas = supported_isas();
  std::printf("quantized matmul: %zu instruction sets checked, best %s\n", isas.size(),
              kernels::quant_isa_name(kernels::quant_isa_best()));
  REQUIRE(kernels::matmul_quant_versions() == 3);
  for (TensorType type : types)
    for (const auto& s : shapes) check_ladder(type, s[0], s[1], isas);
}

TEST_CASE("quantized matmul: the K-quants on the integer rungs (super-blocks of 256)",
          "[kernel][quant]") {
  // 1, 2, 3 and 16 super-blocks per row (an odd count, a row ending mid-tile); rows 1, 31
  // (7 groups of 4 and 3 left), 33 and 17 (a tile of 2 rows and one left).
  const int shapes[][2] = {{256, 1}, {512, 31}, {768, 33}, {4096, 17}};
  const std::vector<QuantIsa> isas = supported_isas();
  for (TensorType type : {TensorType::kQ4_K, TensorType::kQ6_K})
    for (const auto& s : shapes) check_ladder(type, s[0], s[1], isas);
}

TEST_CASE("quantized matmul: F16 and BF16 on float activations, any row length",
          "[kernel][quant]") {
  // Row lengths below, at and past one 16-number step, several steps with a tail of 1 or 15;
  // rows 1, 3, 5 (a group of 4 and one left), 9 and 33.
  const int shapes[][2] = {{1, 1}, {7, 3}, {16, 5}, {17, 9}, {47, 33}, {161, 5}};
  const std::vector<QuantIsa> isas = supported_isas();
  for (TensorType type : {TensorType::kF16, TensorType::kBF16})
    for (const auto& s : shapes) check_ladder(type, s[0], s[1], isas);
}

TEST_CASE("quantized matmul: F16 and BF16 give NaN and infinity where rung 1 does",
          "[kernel][quant]") {
  // Row 0 holds +inf, row 1 a NaN, row 2 +inf and -inf, row 3 a zero where token 2 has +inf
  // (0 * inf), rows 4 and 5 only finite numbers; token 1 has a NaN, token 2 +inf at 20.
  const int n = 37, d = 6, T = 3;
  std::vector<float> wsrc = random_floats(std::size_t(n) * d, 21);
  const float inf = INFINITY;
  wsrc[3] = inf;
  wsrc[n + 30] = NAN;
  wsrc[2 * n + 5] = inf;
  wsrc[2 * n + 36] = -inf;
  wsrc[3 * n + 20] = 0.0f;
  std::vector<float> x = random_floats(std::size_t(T) * n, 22);
  x[n + 11] = NAN;
  x[2 * n + 20] = inf;
  for (TensorType type : {TensorType::kF16, TensorType::kBF16}) {
    CAPTURE(kernels::ggml_type_name(std::uint32_t(type)));
    const QuantMatrix w = QuantMatrix::quantize(type, wsrc.data(), n, d);
    const std::vector<float> ref = run(1, QuantIsa::scalar, x, w, T);
    REQUIRE(std::isinf(ref[0]));  // row 0, token 0: +inf
    REQUIRE(std::isnan(ref[1]));  // row 1: NaN
    REQUIRE(std::isnan(ref[2 * d + 3]));  // row 3, token 2: 0 * inf
    REQUIRE(std::isfinite(ref[4]));
    for (QuantIsa isa : supported_isas()) {
      for (int version : {2, 3}) {
        CAPTURE(kernels::quant_isa_name(isa), version);
        const std::vector<float> y = run(version, isa, x, w, T);
        for (std::size_t i = 0; i < y.size(); ++i) {
          CAPTURE(i, ref[i], y[i]);
          CHECK(std::isnan(y[i]) == std::isnan(ref[i]));
          if (std::isinf(ref[i])) CHECK(y[i] == ref[i]);
          CHECK(std::isfinite(y[i]) == std::isfinite(ref[i]));
        }
      }
    }
  }
}

TEST_CASE("quantized matmul: F16 rungs 2 and 3 add in 8 lanes, rung 1 in one chain",
          "[kernel][quant]") {
  // x = (2^24, 1, 1, ..., 1), w all 1: one chain adds each 1 to 2^24 and rounds it away (ties
  // to even), so rung 1 gives 2^24; the lanes keep the seven 1s apart (lane l holds number l)
  // and add them in the header's order: ((2^24 + 1) + 2) + 4, whose first sum rounds back
  // to 2^24, so 2^24 + 6.
  const int n = 8;
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> x(n, 1.0f);
  x[0] = 16777216.0f;
  const QuantMatrix w = QuantMatrix::quantize(TensorType::kF16, ones.data(), n, 1);
  CHECK(run(1, QuantIsa::scalar, x, w, 1)[0] == 16777216.0f);
  for (QuantIsa isa : supported_isas()) {
    CAPTURE(kernels::quant_isa_name(isa));
    CHECK(run(2, isa, x, w, 1)[0] == 16777222.0f);
    CHECK(run(3, isa, x, w, 1)[0] == 16777222.0f);
  }
}

TEST_CASE("quantized matmul: refusals", "[kernel][quant]") {
  const std::vector<float> w = random_floats(48 * 2, 1);
  CHECK_THROWS_WITH(QuantMatrix::quantize(TensorType::kQ8_0, w.data(), 48, 2),
                    Contains("rows of 48 numbers are not a whole number of Q8_0's 32-number "
                             "blocks"));
  CHECK_THROWS_WITH(QuantMatrix::quantize(TensorType::kQ4_0, w.data(), 0, 2),
                    Contains("no rows"));
  const QuantMatrix q = QuantMatrix::quantize(TensorType::kQ8_0, w.data(), 32, 3);
  std::vector<float> x(32, 1.0f), y(3);
  CHECK_THROWS_WITH(kernels::matmul_quant_version(4, QuantIsa::scalar, y.data(), x.data(), q, 1),
                    Contains("version 4 is outside 1..3"));
  CHECK_THROWS_WITH(kernels::matmul_quant(y.data(), x.data(), QuantMatrix(), 1),
                    Contains("empty"));
  CHECK_THROWS_WITH(kernels::matmul_quant(y.data(), x.data(), q, 0), Contains("T = 0"));
}

TEST_CASE("quantized matmul: a prefill-sized batch spans several token chunks",
          "[kernel][quant]") {
  // 70 tokens: more than one pass of rung 3 over the rows (64 tokens each), a last tile of 6;
  // 3 blocks per row, so the even/odd block sets end on an even block.
  // The K-quants: 3 super-blocks (768 numbers) per row. F16 and BF16: 101 numbers per row
  // (6 steps of 16 and a tail of 5).
  const int d = 5, T = 70;
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                          TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kF16,
                          TensorType::kBF16}) {
    const int n = float_activations(type) ? 101 : 3 * activation_block(type);
    CAPTURE(kernels::ggml_type_name(std::uint32_t(type)));
    const std::vector<float> wsrc = random_floats(std::size_t(n) * d, 11);
    const QuantMatrix w = QuantMatrix::quantize(type, wsrc.data(), n, d);
    std::vector<float> wf(std::size_t(n) * d);
    for (int o = 0; o < d; ++o) w.dequantize_row(o, wf.data() + std::size_t(o) * n);
    const std::vector<float> x = random_floats(std::size_t(T) * n, 12);
    const std::vector<float> ref = run(1, QuantIsa::scalar, x, w, T);
    const std::vector<float> first = run(2, QuantIsa::scalar, x, w, T);
    for (int t = 0; t < T; ++t) {
      for (int o = 0; o < d; ++o) {
        const std::size_t i = std::size_t(t) * d + std::size_t(o);
        CHECK(std::fabs(first[i] - ref[i]) <=
              rung2_bound(type, wf, x.data() + std::size_t(t) * n, n, o));
      }
    }
    for (QuantIsa isa : {QuantIsa::scalar, QuantIsa::avx2, QuantIsa::avx512_vnni}) {
      if (!kernels::quant_isa_supported(isa)) continue;
      CAPTURE(kernels::quant_isa_name(isa));
      const std::vector<float> y = run(3, isa, x, w, T);
      CHECK(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0);
    }
    // Token 66 (in the second chunk, inside its first tile) alone gives its bits in the batch.
    const std::vector<float> one(x.begin() + 66 * n, x.begin() + 67 * n);
    const std::vector<float> alone = run(3, kernels::quant_isa_best(), one, w, 1);
    CHECK(std::memcmp(alone.data(), first.data() + std::size_t(66) * d,
                      std::size_t(d) * sizeof(float)) == 0);
  }
}
