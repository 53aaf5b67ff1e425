// Exercise 14's test: a block worked by hand (its bytes, the rounding of halves), the bytes of
// the core's Q8_0 quantizer (kernels::quantize_ref, llama.cpp's rounding) on random vectors, the
// round-trip bound, and the block dot product against the exact block formula and against the
// float dot product of the original vectors, each within the bound README.md derives.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/quant_formats.hpp"

namespace ex = inferlab::ex14;
namespace kernels = inferlab::kernels;

namespace {

// Random numbers of a random scale per block (1e-4 to 1e2), with a few outliers and a zero
// block: every block gets its own d.
std::vector<float> random_vector(std::mt19937& rng, std::size_t blocks) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-4.0f, 2.0f);
  std::vector<float> x(blocks * ex::kBlockSize);
  for (std::size_t b = 0; b < blocks; ++b) {
    const float scale = b == 3 ? 0.0f : std::pow(10.0f, exponent(rng));
    for (std::size_t j = 0; j < ex::kBlockSize; ++j) {
      const float outlier = j == b % ex::kBlockSize ? 10.0f : 1.0f;
      x[b * ex::kBlockSize + j] = scale * outlier * normal(rng);
    }
  }
  return x;
}

// Per number, the most the round trip may move it: half a step, d / 2 with d = amax / 127, plus
// what rounding d itself to float16 moves q * d (at most 127 |d - d16|), plus a few float ulps.
std::vector<double> roundtrip_bound(const std::vector<float>& x) {
  std::vector<double> bound(x.size());
  for (std::size_t b = 0; b < x.size() / ex::kBlockSize; ++b) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < ex::kBlockSize; ++j)
      amax = std::max(amax, std::fabs(x[b * ex::kBlockSize + j]));
    const float d = amax / 127.0f;
    const double d16 = ex::half_to_float(ex::float_to_half(d));
    const double e = 0.5 * double(d) + 127.0 * std::fabs(double(d) - d16) + 1e-6 * double(amax);
    for (std::size_t j = 0; j < ex::kBlockSize; ++j) bound[b * ex::kBlockSize + j] = e;
  }
  return bound;
}

std::string hex(const std::vector<std::uint8_t>& bytes, std::size_t from, std::size_t n) {
  std::ostringstream s;
  for (std::size_t i = from; i < from + n && i < bytes.size(); ++i)
    s << "0123456789abcdef"[bytes[i] >> 4] << "0123456789abcdef"[bytes[i] & 15];
  return s.str();
}

}  // namespace

TEST_CASE("exercise 14: a block worked by hand", "[exercise][ex14]") {
  // amax = 127, so d = 1 (float16 0x3C00) and q_j = x_j rounded, halves away from zero.
  std::vector<float> x(32, 0.0f);
  const float given[] = {127.0f, -0.5f, 0.5f, 1.5f, 2.5f, -2.5f, 3.49f, -126.6f, 0.49f};
  const int expected[] = {127, -1, 1, 2, 3, -3, 3, -127, 0};
  for (int j = 0; j < 9; ++j) x[std::size_t(j)] = given[j];
  const std::vector<std::uint8_t> block = ex::quantize_q8_0(x);
  REQUIRE(block.size() == 34);
  CHECK(block[0] == 0x00);  // float16 1.0 = 0x3C00, little-endian
  CHECK(block[1] == 0x3C);
  for (int j = 0; j < 32; ++j) {
    CAPTURE(j);
    CHECK(int(std::int8_t(block[2 + std::size_t(j)])) == (j < 9 ? expected[j] : 0));
  }
  const std::vector<float> back = ex::dequantize_q8_0(block);
  REQUIRE(back.size() == 32);
  for (int j = 0; j < 9; ++j) CHECK(back[std::size_t(j)] == float(expected[j]));

  // A zero block: d = 0, every byte 0, and it reads back as zeros.
  const std::vector<std::uint8_t> zero = ex::quantize_q8_0(std::vector<float>(32, 0.0f));
  REQUIRE(zero.size() == 34);
  CHECK(zero == std::vector<std::uint8_t>(34, 0));
  CHECK(ex::dequantize_q8_0(zero) == std::vector<float>(32, 0.0f));
}

TEST_CASE("exercise 14: the bytes are the core's (llama.cpp's) and the round trip is bounded",
          "[exercise][ex14]") {
  std::mt19937 rng(14);
  for (std::size_t blocks : {1u, 2u, 5u, 16u, 128u}) {
    const std::vector<float> x = random_vector(rng, blocks);
    const std::vector<std::uint8_t> yours = ex::quantize_q8_0(x);
    std::vector<std::uint8_t> core(blocks * ex::kBlockBytes);
    kernels::quantize_ref(kernels::TensorType::kQ8_0, x.data(), core.data(), x.size());
    CAPTURE(blocks);
    REQUIRE(yours.size() == core.size());
    for (std::size_t b = 0; b < blocks; ++b) {
      CAPTURE(b);
      CHECK(hex(yours, b * 34, 34) == hex(core, b * 34, 34));
    }
    const std::vector<float> back = ex::dequantize_q8_0(core);
    REQUIRE(back.size() == x.size());
    std::vector<float> core_back(x.size());
    kernels::dequantize_ref(kernels::TensorType::kQ8_0, core.data(), core_back.data(), x.size());
    CHECK(back == core_back);
    const std::vector<double> bound = roundtrip_bound(x);
    for (std::size_t i = 0; i < x.size(); ++i) {
      CAPTURE(i, x[i], back[i], bound[i]);
      CHECK(std::fabs(double(back[i]) - double(x[i])) <= bound[i]);
    }
  }
}

TEST_CASE("exercise 14: the block dot product", "[exercise][ex14]") {
  std::mt19937 rng(140);
  for (std::size_t blocks : {1u, 3u, 24u, 128u}) {
    CAPTURE(blocks);
    const std::vector<float> w = random_vector(rng, blocks), a = random_vector(rng, blocks);
    std::vector<std::uint8_t> wq(blocks * 34), aq(blocks * 34);
    kernels::quantize_ref(kernels::TensorType::kQ8_0, w.data(), wq.data(), w.size());
    kernels::quantize_ref(kernels::TensorType::kQ8_0, a.data(), aq.data(), a.size());
    const float yours = ex::dot_q8_0(wq, aq);

    // The exact block formula, in double, and the float accumulation's worst rounding.
    double exact = 0.0, magnitude = 0.0;
    for (std::size_t b = 0; b < blocks; ++b) {
      std::uint16_t dw, da;
      std::memcpy(&dw, &wq[b * 34], 2);
      std::memcpy(&da, &aq[b * 34], 2);
      long dot = 0;
      for (std::size_t j = 0; j < 32; ++j)
        dot += long(std::int8_t(wq[b * 34 + 2 + j])) * long(std::int8_t(aq[b * 34 + 2 + j]));
      const double term = double(ex::half_to_float(dw)) * ex::half_to_float(da) * double(dot);
      exact += term;
      magnitude += std::fabs(term);
    }
    CAPTURE(yours, exact);
    CHECK(std::fabs(double(yours) - exact) <= double(blocks + 2) * 1.2e-7 * magnitude);

    // Against the float dot product of the original vectors: with ew, ea the round-trip bounds,
    // |w.a - w^.a^| <= sum_i |a_i| ew_i + |w_i| ea_i + ew_i ea_i.
    const std::vector<double> ew = roundtrip_bound(w), ea = roundtrip_bound(a);
    double dot = 0.0, bound = 0.0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      dot += double(w[i]) * double(a[i]);
      bound += std::fabs(double(a[i])) * ew[i] + std::fabs(double(w[i])) * ea[i] + ew[i] * ea[i];
    }
    CAPTURE(dot, bound);
    CHECK(std::fabs(double(yours) - dot) <= bound + double(blocks + 2) * 1.2e-7 * magnitude);
    // The bound is far from vacuous: it is a small share of the sum of |w_i a_i|.
    double abs_sum = 0.0;
    for (std::size_t i = 0; i < w.size(); ++i) abs_sum += std::fabs(double(w[i]) * double(a[i]));
    CHECK(bound < 0.05 * abs_sum);
  }
  // One block by hand: d = 1 for both, so the dot is the integer one.
  std::vector<float> w(32, 0.0f), a(32, 0.0f);
  w[0] = 127.0f;
  a[0] = 127.0f;
  w[1] = -3.0f;
  a[1] = 5.0f;
  CHECK(ex::dot_q8_0(ex::quantize_q8_0(w), ex::quantize_q8_0(a)) == 127.0f * 127.0f - 15.0f);
}

TEST_CASE("exercise 14: sizes that are not whole blocks are refused", "[exercise][ex14]") {
  CHECK_THROWS_AS(ex::quantize_q8_0(std::vector<float>(33, 1.0f)), inferlab::Error);
  CHECK_THROWS_AS(ex::dequantize_q8_0(std::vector<std::uint8_t>(35, 0)), inferlab::Error);
  const std::vector<std::uint8_t> one(34, 0), two(68, 0);
  CHECK_THROWS_AS(ex::dot_q8_0(one, two), inferlab::Error);
  CHECK_THROWS_AS(ex::dot_q8_0(std::vector<std::uint8_t>(33, 0), std::vector<std::uint8_t>(33, 0)),
                  inferlab::Error);
}
