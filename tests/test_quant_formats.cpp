// Tests of the storage formats (the K-quants Q4_K, Q6_K and the 5-bit Q5_0, Q5_1): hand-built
// blocks dequantize to the values the layout says, quantize then dequantize stays within each
// format's step, and the reference quantizers give llama.cpp's bytes
// (tests/golden/quant_blocks.json, written by scripts/golden/quant_blocks.py from
// llama-quantize's output).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/kernels/quant_formats.hpp"
#include "test_support.hpp"

namespace {

namespace kernels = inferlab::kernels;
using kernels::TensorType;

std::uint16_t half_bits(float x) {
  // Exact for the values used here (small integers and powers of two).
  if (x == 0.0f) return 0;
  int e;
  const float m = std::frexp(std::fabs(x), &e);  // x = m * 2^e, m in [0.5, 1)
  const auto mant = std::uint16_t(std::lround((m * 2.0f - 1.0f) * 1024.0f));
  return std::uint16_t((x < 0 ? 0x8000 : 0) | ((e - 1 + 15) << 10) | mant);
}

float half_value(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  float out;
  kernels::dequantize_ref(TensorType::kF16, &bits, &out, 1);
  return out;
}

void put_half(std::uint8_t* p, float x) {
  const std::uint16_t bits = half_bits(x);
  std::memcpy(p, &bits, 2);
}

std::vector<float> roundtrip(TensorType t, const std::vector<float>& x) {
  std::vector<std::uint8_t> packed(kernels::tensor_bytes(t, x.size()));
  kernels::quantize_ref(t, x.data(), packed.data(), x.size());
  std::vector<float> y(x.size());
  kernels::dequantize_ref(t, packed.data(), y.data(), x.size());
  return y;
}

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = std::uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::string to_hex(const std::uint8_t* p, std::size_t n) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

}  // namespace

TEST_CASE("K-quant sizes and names", "[unit][kernel]") {
  CHECK(kernels::block_elements(TensorType::kQ4_K) == 256);
  CHECK(kernels::block_elements(TensorType::kQ6_K) == 256);
  CHECK(kernels::block_bytes(TensorType::kQ4_K) == 144);  // 4.5 bits per number
  CHECK(kernels::block_bytes(TensorType::kQ6_K) == 210);  // 6.5625 bits per number
  CHECK(kernels::tensor_bytes(TensorType::kQ4_K, 512) == 288);
  CHECK(kernels::is_supported_tensor_type(12));
  CHECK(kernels::is_supported_tensor_type(14));
  CHECK_FALSE(kernels::is_supported_tensor_type(13));  // Q5_K
  CHECK(kernels::ggml_type_name(12) == "Q4_K");
  CHECK_THROWS_WITH(kernels::tensor_bytes(TensorType::kQ6_K, 288),
                    Catch::Matchers::Contains("not a whole number of 256-number blocks"));
}

TEST_CASE("Q4_K: a hand-built super-block dequantizes as its layout says", "[unit][kernel]") {
  // Sub-block s gets scale sc[s] = 10 + 7s and minimum m[s] = 60 - 5s (6 bits each, so s >= 4
  // uses the packed high bits); element e's nibble is e % 16.
  std::uint8_t block[144] = {};
  put_half(block, 0.5f);        // d
  put_half(block + 2, 0.125f);  // dmin
  int sc[8], m[8];
  std::uint8_t* packed = block + 4;
  for (int s = 0; s < 8; ++s) {
    sc[s] = 10 + 7 * s;
    m[s] = 60 - 5 * s;
    if (s < 4) {
      packed[s] = std::uint8_t(sc[s]);
      packed[s + 4] = std::uint8_t(m[s]);
    } else {
      packed[s + 4] = std::uint8_t((sc[s] & 15) | ((m[s] & 15) << 4));
      packed[s - 4] = std::uint8_t(packed[s - 4] | ((sc[s] >> 4) << 6));
      packed[s] = std::uint8_t(packed[s] | ((m[s] >> 4) << 6));
    }
  }
  // Nibble byte 32c + l: element 64c + l low, 64c + 32 + l high.
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      block[16 + 32 * c + l] = std::uint8_t((l % 16) | (((32 + l) % 16) << 4));
  float out[256];
  kernels::dequantize_ref(TensorType::kQ4_K, block, out, 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    CAPTURE(e);
    CHECK(out[e] == 0.5f * float(sc[s]) * float(e % 16) - 0.125f * float(m[s]));
  }
}

TEST_CASE("Q6_K: a hand-built super-block dequantizes as its layout says", "[unit][kernel]") {
  // Element e's 6-bit q is (5e + 3) % 64, sub-block s's scale is s - 8 (negative ones too).
  std::uint8_t block[210] = {};
  int q[256];
  for (int e = 0; e < 256; ++e) q[e] = (5 * e + 3) % 64;
  std::uint8_t* ql = block;
  std::uint8_t* qh = block + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int* qq = q + 128 * h;
      ql[64 * h + l] = std::uint8_t((qq[l] & 15) | ((qq[64 + l] & 15) << 4));
      ql[64 * h + 32 + l] = std::uint8_t((qq[32 + l] & 15) | ((qq[96 + l] & 15) << 4));
      qh[32 * h + l] = std::uint8_t((qq[l] >> 4) | ((qq[32 + l] >> 4) << 2) |
                                    ((qq[64 + l] >> 4) << 4) | ((qq[96 + l] >> 4) << 6));
    }
  }
  for (int s = 0; s < 16; ++s) block[192 + s] = std::uint8_t(std::int8_t(s - 8));
  put_half(block + 208, 0.25f);
  float out[256];
  kernels::dequantize_ref(TensorType::kQ6_K, block, out, 256);
  for (int e = 0; e < 256; ++e) {
    CAPTURE(e);
    CHECK(out[e] == 0.25f * float(e / 16 - 8) * float(q[e] - 32));
  }
}

TEST_CASE("K-quants: an all-zero super-block is all zero bytes", "[unit][kernel]") {
  const std::vector<float> zeros(256, 0.0f);
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ6_K}) {
    std::vector<std::uint8_t> packed(kernels::block_bytes(t), 0xAB);
    kernels::quantize_ref(t, zeros.data(), packed.data(), 256);
    CHECK(std::all_of(packed.begin(), packed.end(), [](std::uint8_t b) { return b == 0; }));
    CHECK(roundtrip(t, zeros) == zeros);
  }
}

TEST_CASE("K-quants: every number dequantizes to the nearest value its sub-block holds",
          "[unit][kernel]") {
  // The scale search trades one number's error for the sub-block's weighted error, so the
  // bound is not half an ideal step; what holds exactly is that, once the scales are stored,
  // each number takes the representable value nearest to it.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 16);
  for (float& v : x) v = normal(rng);
  for (std::size_t i = 0; i < x.size(); i += 97) x[i] *= 8.0f;  // a few outliers
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ6_K}) {
    CAPTURE(kernels::ggml_type_name(std::uint32_t(t)));
    std::vector<std::uint8_t> packed(kernels::tensor_bytes(t, x.size()));
    kernels::quantize_ref(t, x.data(), packed.data(), x.size());
    std::vector<float> y(x.size());
    kernels::dequantize_ref(t, packed.data(), y.data(), x.size());
    const std::size_t sub = t == TensorType::kQ4_K ? 32 : 16;
    for (std::size_t e = 0; e < x.size(); ++e) {
      const std::uint8_t* block = packed.data() + e / 256 * kernels::block_bytes(t);
      const int s = int(e % 256 / sub);
      // The sub-block's grid: step * q - offset for every q the format has.
      float step, offset;
      int q_lo, q_hi;
      if (t == TensorType::kQ4_K) {
        const std::uint8_t* sc = block + 4;
        const int scale = s < 4 ? sc[s] & 63 : (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4);
        const int min = s < 4 ? sc[s + 4] & 63 : (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
        step = half_value(block) * float(scale);
        offset = half_value(block + 2) * float(min);
        q_lo = 0;
        q_hi = 15;
      } else {
        step = half_value(block + 208) * float(std::int8_t(block[192 + s]));
        offset = 0.0f;
        q_lo = -32;
        q_hi = 31;
      }
      float nearest = std::fabs(x[e] - (step * float(q_lo) - offset));
      for (int q = q_lo + 1; q <= q_hi; ++q)
        nearest = std::min(nearest, std::fabs(x[e] - (step * float(q) - offset)));
      CAPTURE(e, x[e], y[e], step, offset);
      CHECK(std::fabs(x[e] - y[e]) <= nearest * (1.0f + 1e-5f) + 1e-6f);
    }
  }
}

TEST_CASE("K-quants: the error falls with the bits", "[unit][kernel]") {
  // Relative RMS error on normal numbers: about 2^-bits of the range, so Q6_K's is about a
  // quarter of Q4_K's; both better than the 32-blocks of the same width (Q4_0, Q8_0 aside).
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 64);
  for (float& v : x) v = normal(rng);
  auto rel_rms = [&](TensorType t) {
    const std::vector<float> y = roundtrip(t, x);
    double err2 = 0.0, x2 = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      err2 += double(y[i] - x[i]) * double(y[i] - x[i]);
      x2 += double(x[i]) * double(x[i]);
    }
    return std::sqrt(err2 / x2);
  };
  const double q4k = rel_rms(TensorType::kQ4_K), q6k = rel_rms(TensorType::kQ6_K);
  const double q4_0 = rel_rms(TensorType::kQ4_0), q8_0 = rel_rms(TensorType::kQ8_0);
  CAPTURE(q4k, q6k, q4_0, q8_0);
  CHECK(q4k < 0.08);
  CHECK(q6k < 0.02);
  CHECK(q4k < q4_0);
  CHECK(q6k < q4k / 3.0);
  CHECK(q8_0 < q6k);
}

TEST_CASE("quantizers give llama-quantize's bytes (tests/golden/quant_blocks.json)",
          "[unit][kernel][golden]") {
  std::ifstream in(std::string(INFERLAB_SOURCE_DIR) + "/tests/golden/quant_blocks.json");
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json golden = nlohmann::json::parse(text.str());
  std::size_t checked = 0;
  for (const auto& b : golden.at("blocks")) {
    const std::string type = b.at("type");
    INFO(type << " block " << b.at("block") << " of " << b.at("tensor").get<std::string>());
    std::uint32_t id = 0;
    while (id < 64 && kernels::ggml_type_name(id) != type) ++id;
    REQUIRE(kernels::is_supported_tensor_type(id));
    const auto t = TensorType(id);
    const std::vector<std::uint8_t> input = from_hex(b.at("f32"));
    std::vector<float> x(input.size() / 4);
    std::memcpy(x.data(), input.data(), input.size());
    REQUIRE(x.size() == kernels::block_elements(t) * b.at("count").get<std::size_t>());
    std::vector<std::uint8_t> packed(kernels::tensor_bytes(t, x.size()));
    kernels::quantize_ref(t, x.data(), packed.data(), x.size());
    CHECK(to_hex(packed.data(), packed.size()) == b.at("bytes").get<std::string>());
    ++checked;
  }
  CHECK(checked >= 4);
}

TEST_CASE("Q5_0 and Q5_1: sizes, names and a hand-built block", "[unit][kernel]") {
  CHECK(kernels::ggml_type_name(6) == "Q5_0");
  CHECK(kernels::ggml_type_name(7) == "Q5_1");
  CHECK(kernels::is_supported_tensor_type(6));
  CHECK(kernels::is_supported_tensor_type(7));
  CHECK(kernels::block_elements(TensorType::kQ5_0) == 32);
  CHECK(kernels::block_bytes(TensorType::kQ5_0) == 22);  // 5.5 bits per number
  CHECK(kernels::block_bytes(TensorType::kQ5_1) == 24);  // 6 bits per number
  // q[j] = j (0..31): element j's low nibble in byte j % 16 (high half for j >= 16), its
  // fifth bit in bit j of the little-endian qh word: set for 16..31.
  std::uint8_t b0[22] = {}, b1[24] = {};
  put_half(b0, 0.5f);
  put_half(b1, 0.25f);
  put_half(b1 + 2, -1.0f);
  for (int i = 0; i < 4; ++i) b0[2 + i] = b1[4 + i] = i < 2 ? 0x00 : 0xFF;
  for (int j = 0; j < 16; ++j) b0[6 + j] = b1[8 + j] = std::uint8_t(j | (j << 4));
  float y0[32], y1[32];
  kernels::dequantize_ref(TensorType::kQ5_0, b0, y0, 32);
  kernels::dequantize_ref(TensorType::kQ5_1, b1, y1, 32);
  for (int j = 0; j < 32; ++j) {
    CAPTURE(j);
    CHECK(y0[j] == 0.5f * float(j - 16));
    CHECK(y1[j] == 0.25f * float(j) - 1.0f);
  }
  // And back: these values are exactly on the grid, so quantize_ref restores the bytes.
  std::uint8_t back0[22], back1[24];
  kernels::quantize_ref(TensorType::kQ5_1, y1, back1, 32);
  CHECK(to_hex(back1, 24) == to_hex(b1, 24));
  y0[0] = -8.0f;  // the largest magnitude, negative: the scale is -8 / -16 = 0.5
  kernels::quantize_ref(TensorType::kQ5_0, y0, back0, 32);
  CHECK(to_hex(back0, 22) == to_hex(b0, 22));
}

TEST_CASE("Q5_0 and Q5_1: quantize then dequantize is within half a step", "[unit][kernel]") {
  std::mt19937 rng(26);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(32 * 64);
  for (float& v : x) v = dist(rng);
  for (TensorType t : {TensorType::kQ5_0, TensorType::kQ5_1}) {
    CAPTURE(kernels::ggml_type_name(std::uint32_t(t)));
    std::vector<std::uint8_t> packed(kernels::tensor_bytes(t, x.size()));
    kernels::quantize_ref(t, x.data(), packed.data(), x.size());
    std::vector<float> y(x.size());
    kernels::dequantize_ref(t, packed.data(), y.data(), x.size());
    const std::size_t bytes = kernels::block_bytes(t);
    int bad = 0;
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
      const float d = half_value(packed.data() + b * bytes);  // Q5_0: signed, max / -16
      float amax = 0.0f;
      for (std::size_t j = 32 * b; j < 32 * b + 32; ++j) amax = std::max(amax, std::fabs(x[j]));
      for (std::size_t j = 32 * b; j < 32 * b + 32; ++j) {
        // Half a step, plus the float16 rounding of the scale (and minimum) that the quantizer
        // did not see. Q5_0 maps the largest magnitude to -16: a number of the other sign near
        // it (x / d above 15.5) would need +16 and is clamped to 15, up to one step away.
        const bool clamped = t == TensorType::kQ5_0 && x[j] / d > 15.5f;
        const float bound = (clamped ? 1.0f : 0.5f) * std::fabs(d) + 2e-3f * amax;
        if (std::fabs(y[j] - x[j]) > bound) ++bad;
      }
    }
    CHECK(bad == 0);
  }
}
