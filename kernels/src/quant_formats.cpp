// GGUF tensor storage types: sizes, names, reference dequantizers and quantizers.
#include "inferlab/kernels/quant_formats.hpp"

#include <Eigen/Core>  // Eigen::half, Eigen::bfloat16: round-to-nearest-even conversions

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "inferlab/kernels/error.hpp"
#include "quant_dot.hpp"

namespace inferlab::kernels {

namespace {

constexpr std::size_t kBlock = 32;   // numbers per Q8_0, Q4_0, Q4_1 block
constexpr std::size_t kSuper = 256;  // numbers per K-quant super-block
constexpr std::size_t kQ4KBytes = 2 + 2 + 12 + kSuper / 2;
constexpr std::size_t kQ6KBytes = kSuper / 2 + kSuper / 4 + kSuper / 16 + 2;

float load_half(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  return float(Eigen::numext::bit_cast<Eigen::half>(bits));
}

void store_half(std::uint8_t* p, float x) {
  const auto bits = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(x));
  std::memcpy(p, &bits, 2);
}

// The value of largest magnitude in a block, its sign kept: Q4_0 and Q5_0 map it to their most
// negative step, so the whole range of steps is used.
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (std::size_t j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// The smallest and largest value of a block: Q4_1 and Q5_1 step up from the smallest.
std::pair<float, float> block_range(const float* x) {
  float lo = x[0], hi = x[0];
  for (std::size_t j = 1; j < kBlock; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  return {lo, hi};
}

// The 5-bit numbers of a Q5_0 / Q5_1 block (after its scale, and minimum): 4 bytes qh, bit j
// (little-endian) the high bit of element j, then 16 bytes of low nibbles laid out as Q4_0's.
void pack_q5(const int* q, std::uint8_t* out) {
  std::uint32_t qh = 0;
  for (std::size_t j = 0; j < kBlock; ++j) qh |= std::uint32_t((q[j] >> 4) & 1) << j;
  for (int i = 0; i < 4; ++i) out[i] = std::uint8_t(qh >> (8 * i));
  for (std::size_t j = 0; j < kBlock / 2; ++j)
    out[4 + j] = std::uint8_t((q[j] & 0x0F) | ((q[j + kBlock / 2] & 0x0F) << 4));
}

void unpack_q5(const std::uint8_t* in, int* q) {
  for (std::size_t j = 0; j < kBlock / 2; ++j) {
    q[j] = (in[4 + j] & 0x0F) | (((in[j / 8] >> (j % 8)) & 1) << 4);
    const std::size_t k = j + kBlock / 2;
    q[k] = (in[4 + j] >> 4) | (((in[k / 8] >> (k % 8)) & 1) << 4);
  }
}

// Round to the nearest integer, ties to even (the default rounding mode), as llama.cpp's
// nearest_int() does for every value its K-quant search meets.
int round_even(float x) { return int(std::nearbyint(x)); }

// ---- Q4_K -----------------------------------------------------------------------------------

// The best scale and minimum for one sub-block of n numbers as x ~= scale * q - offset with q
// in [0, qmax] (the minimum is never above 0, so offset >= 0): weighted least squares over a
// sweep of candidate steps, starting from the one that maps [min, max] onto [0, qmax]. Writes
// the chosen q to q_out and offset to *offset; returns scale. The arithmetic order matches
// llama.cpp's make_qkx2_quants(), whose results the K-quant files hold.
float fit_scale_and_offset(int n, int qmax, const float* x, const float* w, std::uint8_t* q_out,
                           float* offset) {
  constexpr float kFirstStep = -1.0f, kStepDelta = 0.1f;  // the sweep's candidates
  constexpr int kSteps = 20;
  float lo = x[0], hi = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (lo > 0.0f) lo = 0.0f;
  if (hi == lo) {
    std::fill(q_out, q_out + n, std::uint8_t{0});
    *offset = -lo;
    return 0.0f;
  }
  const auto clamp_q = [qmax](int v) { return std::uint8_t(std::clamp(v, 0, qmax)); };
  float inv = float(qmax) / (hi - lo);
  float scale = 1.0f / inv;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    q_out[i] = clamp_q(round_even(inv * (x[i] - lo)));
    const float diff = scale * float(q_out[i]) + lo - x[i];
    best_error += w[i] * (diff * diff);
  }
  std::uint8_t trial[kSuper];
  for (int step = 0; step <= kSteps; ++step) {
    inv = (kFirstStep + kStepDelta * float(step) + float(qmax)) / (hi - lo);
    float sum_q = 0.0f, sum_q2 = 0.0f, sum_xq = 0.0f;
    for (int i = 0; i < n; ++i) {
      trial[i] = clamp_q(round_even(inv * (x[i] - lo)));
      const float wq = w[i] * float(trial[i]);
      sum_q += wq;
      sum_q2 += wq * float(trial[i]);
      sum_xq += wq * x[i];
    }
    // Least squares for x ~= s * q + m over this step's q (Cramer's rule), m clipped at 0.
    const float det = sum_w * sum_q2 - sum_q * sum_q;
    if (!(det > 0.0f)) continue;
    float s = (sum_w * sum_xq - sum_x * sum_q) / det;
    float m = (sum_q2 * sum_x - sum_q * sum_xq) / det;
    if (m > 0.0f) {
      m = 0.0f;
      s = sum_xq / sum_q2;
    }
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = s * float(trial[i]) + m - x[i];
      error += w[i] * (diff * diff);
    }
    if (error < best_error) {
      std::copy(trial, trial + n, q_out);
      best_error = error;
      scale = s;
      lo = m;
    }
  }
  *offset = -lo;
  return scale;
}

using quant_dot::q4k_scale_min;

void quantize_q4k_block(const float* x, std::uint8_t* out) {
  constexpr int kSubs = 8, kSub = 32;
  std::uint8_t q[kSuper];
  float scales[kSubs], mins[kSubs], w[kSub];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < kSubs; ++s) {
    const float* xs = x + kSub * s;
    // Weights favour large magnitudes, on a floor of the sub-block's RMS.
    float sum_x2 = 0.0f;
    for (int i = 0; i < kSub; ++i) sum_x2 += xs[i] * xs[i];
    const float rms = std::sqrt(sum_x2 / float(kSub));
    for (int i = 0; i < kSub; ++i) w[i] = rms + std::fabs(xs[i]);
    scales[s] = fit_scale_and_offset(kSub, 15, xs, w, q + kSub * s, &mins[s]);
    max_scale = std::max(max_scale, scales[s]);
    max_min = std::max(max_min, mins[s]);
  }
  // The sub-block scales and minimums as 6-bit multiples of d = max_scale / 63 and dmin.
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::uint8_t* packed = out + 4;
  for (int s = 0; s < kSubs; ++s) {
    const int sc = std::min(63, int(std::uint8_t(round_even(inv_scale * scales[s]))));
    const int m = std::min(63, int(std::uint8_t(round_even(inv_min * mins[s]))));
    if (s < 4) {
      packed[s] = std::uint8_t(sc);
      packed[s + 4] = std::uint8_t(m);
    } else {
      packed[s + 4] = std::uint8_t((sc & 0x0F) | ((m & 0x0F) << 4));
      packed[s - 4] = std::uint8_t(packed[s - 4] | ((sc >> 4) << 6));
      packed[s] = std::uint8_t(packed[s] | ((m >> 4) << 6));
    }
  }
  store_half(out, max_scale / 63.0f);
  store_half(out + 2, max_min / 63.0f);
  // Requantize against the scales as stored (float16 d times a 6-bit integer), not as fitted.
  const float d = load_half(out), dmin = load_half(out + 2);
  for (int s = 0; s < kSubs; ++s) {
    int sc, m;
    q4k_scale_min(packed, s, &sc, &m);
    const float step = d * float(sc);
    if (step == 0.0f) continue;  // the fitted q stay (they dequantize to -dmin * m anyway)
    const float offset = dmin * float(m);
    for (int i = 0; i < kSub; ++i)
      q[kSub * s + i] =
          std::uint8_t(std::clamp(round_even((x[kSub * s + i] + offset) / step), 0, 15));
  }
  std::uint8_t* nibbles = out + 16;
  for (std::size_t c = 0; c < kSuper / 64; ++c)
    for (std::size_t l = 0; l < 32; ++l)
      nibbles[32 * c + l] = std::uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

void dequantize_q4k_block(const std::uint8_t* in, float* y) {
  const float d = load_half(in), dmin = load_half(in + 2);
  const std::uint8_t* nibbles = in + 16;
  for (int c = 0; c < 4; ++c) {
    int sc_lo, m_lo, sc_hi, m_hi;
    q4k_scale_min(in + 4, 2 * c, &sc_lo, &m_lo);
    q4k_scale_min(in + 4, 2 * c + 1, &sc_hi, &m_hi);
    const float step_lo = d * float(sc_lo), offset_lo = dmin * float(m_lo);
    const float step_hi = d * float(sc_hi), offset_hi = dmin * float(m_hi);
    for (int l = 0; l < 32; ++l) {
      y[64 * c + l] = step_lo * float(nibbles[32 * c + l] & 0x0F) - offset_lo;
      y[64 * c + 32 + l] = step_hi * float(nibbles[32 * c + l] >> 4) - offset_hi;
    }
  }
}

// ---- Q6_K -----------------------------------------------------------------------------------

// The best symmetric scale for one sub-block of n numbers as x ~= scale * q, q in [-qmax,
// qmax - 1], weighting each number by its square: the step that maps the largest magnitude to
// -qmax, then 18 nearby steps, keeping the one with the least weighted squared error. Writes
// q + qmax to q_out; returns scale (negative when the largest magnitude is positive). The
// arithmetic order matches llama.cpp's make_qx_quants() (rmse_type 1).
float fit_symmetric_scale(int n, int qmax, const float* x, std::int8_t* q_out) {
  float amax = 0.0f, extreme = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      extreme = x[i];
    }
  }
  if (amax < 1e-15f) {  // all (near) zero
    std::fill(q_out, q_out + n, std::int8_t{0});
    return 0.0f;
  }
  // q for candidate inverse step inv; returns sum w*x*q and sum w*q*q in *sxq and *sq2.
  const auto trial = [&](float inv, std::int8_t* q, float* sxq, float* sq2) {
    *sxq = *sq2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int v = std::clamp(round_even(inv * x[i]), -qmax, qmax - 1);
      if (q != nullptr) q[i] = std::int8_t(v + qmax);
      const float w = x[i] * x[i];
      *sxq += w * x[i] * float(v);
      *sq2 += w * float(v) * float(v);
    }
  };
  float sxq, sq2;
  trial(float(-qmax) / extreme, q_out, &sxq, &sq2);
  float scale = sq2 != 0.0f ? sxq / sq2 : 0.0f;
  float best = scale * sxq;  // the error is sum w*x^2 - best: larger best, smaller error
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    const float inv = -(float(qmax) + 0.1f * float(k)) / extreme;
    trial(inv, nullptr, &sxq, &sq2);
    if (sq2 > 0.0f && sxq * sxq > best * sq2) {
      trial(inv, q_out, &sxq, &sq2);
      scale = sxq / sq2;
      best = scale * sxq;
    }
  }
  return scale;
}

void quantize_q6k_block(const float* x, std::uint8_t* out) {
  constexpr int kSubs = 16, kSub = 16;
  std::int8_t q[kSuper];
  float scales[kSubs];
  float max_scale = 0.0f, max_abs = 0.0f;
  for (int s = 0; s < kSubs; ++s) {
    scales[s] = fit_symmetric_scale(kSub, 32, x + kSub * s, q + kSub * s);
    if (std::fabs(scales[s]) > max_abs) {
      max_abs = std::fabs(scales[s]);
      max_scale = scales[s];
    }
  }
  std::memset(out, 0, kQ6KBytes);
  if (max_abs < 1e-15f) return;  // an all-zero block: every byte 0
  std::uint8_t* ql = out;
  std::uint8_t* qh = out + kSuper / 2;
  auto* sc = reinterpret_cast<std::int8_t*>(out + kSuper / 2 + kSuper / 4);
  // The sub-block scales as int8 multiples of d; the largest one's sign makes it -128.
  const float inv = -128.0f / max_scale;
  store_half(out + kQ6KBytes - 2, 1.0f / inv);
  for (int s = 0; s < kSubs; ++s) sc[s] = std::int8_t(std::min(127, round_even(inv * scales[s])));
  // Requantize against the scales as stored.
  const float d = load_half(out + kQ6KBytes - 2);
  for (int s = 0; s < kSubs; ++s) {
    const float step = d * float(sc[s]);
    if (step == 0.0f) continue;
    for (int i = 0; i < kSub; ++i)
      q[kSub * s + i] = std::int8_t(std::clamp(round_even(x[kSub * s + i] / step), -32, 31) + 32);
  }
  for (std::size_t h = 0; h < kSuper / 128; ++h) {
    const std::int8_t* qq = q + 128 * h;
    for (std::size_t l = 0; l < 32; ++l) {
      ql[64 * h + l] = std::uint8_t((qq[l] & 0x0F) | ((qq[64 + l] & 0x0F) << 4));
      ql[64 * h + 32 + l] = std::uint8_t((qq[32 + l] & 0x0F) | ((qq[96 + l] & 0x0F) << 4));
      qh[32 * h + l] = std::uint8_t((qq[l] >> 4) | ((qq[32 + l] >> 4) << 2) |
                                    ((qq[64 + l] >> 4) << 4) | ((qq[96 + l] >> 4) << 6));
    }
  }
}

void dequantize_q6k_block(const std::uint8_t* in, float* y) {
  const std::uint8_t* ql = in;
  const std::uint8_t* qh = in + kSuper / 2;
  const auto* sc = reinterpret_cast<const std::int8_t*>(in + kSuper / 2 + kSuper / 4);
  const float d = load_half(in + kQ6KBytes - 2);
  for (int h = 0; h < 2; ++h, ql += 64, qh += 32, sc += 8, y += 128) {
    for (int l = 0; l < 32; ++l) {
      // Element 32 * k + l of this half: low bits in ql, high bits in qh's bit pair k.
      const int q0 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q1 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      const int s = l / 16;
      y[l] = d * float(sc[s]) * float(q0);
      y[l + 32] = d * float(sc[s + 2]) * float(q1);
      y[l + 64] = d * float(sc[s + 4]) * float(q2);
      y[l + 96] = d * float(sc[s + 6]) * float(q3);
    }
  }
}

void require_blocks(TensorType type, std::size_t n, const char* where) {
  if (n % block_elements(type) != 0) {
    throw Error(std::string(where) + ": " + std::to_string(n) + " numbers of type " +
                ggml_type_name(std::uint32_t(type)) + " are not a whole number of " +
                std::to_string(block_elements(type)) + "-number blocks");
  }
}

}  // namespace

std::string ggml_type_name(std::uint32_t ggml_type) {
  // ggml's type table (ggml.h, enum ggml_type); ids 4 and 5 (Q4_2, Q4_3) were withdrawn.
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "",       "",      "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16"};
  constexpr std::uint32_t kCount = sizeof kNames / sizeof kNames[0];
  if (ggml_type < kCount && kNames[ggml_type][0] != '\0') return kNames[ggml_type];
  return "type " + std::to_string(ggml_type);
}

bool is_supported_tensor_type(std::uint32_t ggml_type) {
  switch (TensorType(ggml_type)) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ4_K:
    case TensorType::kQ6_K:
      return true;
  }
  return false;
}

const char* supported_tensor_types() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q6_K";
}

std::size_t block_elements(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      return 1;
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
      return kBlock;
    case TensorType::kQ4_K:
    case TensorType::kQ6_K:
      return kSuper;
  }
  throw Error("block_elements: unsupported tensor type " + ggml_type_name(std::uint32_t(type)));
}

std::size_t block_bytes(TensorType type) {
  switch (type) {
    case TensorType::kF32:
      return 4;
    case TensorType::kF16:
    case TensorType::kBF16:
      return 2;
    case TensorType::kQ8_0:
      return 2 + kBlock;
    case TensorType::kQ4_0:
      return 2 + kBlock / 2;
    case TensorType::kQ4_1:
      return 4 + kBlock / 2;
    case TensorType::kQ5_0:
      return 2 + 4 + kBlock / 2;
    case TensorType::kQ5_1:
      return 4 + 4 + kBlock / 2;
    case TensorType::kQ4_K:
      return kQ4KBytes;
    case TensorType::kQ6_K:
      return kQ6KBytes;
  }
  throw Error("block_bytes: unsupported tensor type " + ggml_type_name(std::uint32_t(type)));
}

std::size_t tensor_bytes(TensorType type, std::size_t n) {
  require_blocks(type, n, "tensor_bytes");
  return n / block_elements(type) * block_bytes(type);
}

void dequantize_ref(TensorType type, const void* src, float* dst, std::size_t n) {
  require_blocks(type, n, "dequantize_ref");
  const auto* p = static_cast<const std::uint8_t*>(src);
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, p, n * sizeof(float));
      return;
    case TensorType::kF16:
      for (std::size_t i = 0; i < n; ++i) dst[i] = load_half(p + 2 * i);
      return;
    case TensorType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        dst[i] = float(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
      }
      return;
    case TensorType::kQ8_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p);
        for (std::size_t j = 0; j < kBlock; ++j) dst[j] = float(std::int8_t(p[2 + j])) * d;
      }
      return;
    case TensorType::kQ4_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p);
        for (std::size_t j = 0; j < kBlock / 2; ++j) {
          dst[j] = float(int(p[2 + j] & 0x0F) - 8) * d;
          dst[j + kBlock / 2] = float(int(p[2 + j] >> 4) - 8) * d;
        }
      }
      return;
    case TensorType::kQ4_1:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p), m = load_half(p + 2);
        for (std::size_t j = 0; j < kBlock / 2; ++j) {
          dst[j] = float(p[4 + j] & 0x0F) * d + m;
          dst[j + kBlock / 2] = float(p[4 + j] >> 4) * d + m;
        }
      }
      return;
    case TensorType::kQ5_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p);
        int q[kBlock];
        unpack_q5(p + 2, q);
        for (std::size_t j = 0; j < kBlock; ++j) dst[j] = float(q[j] - 16) * d;
      }
      return;
    case TensorType::kQ5_1:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), dst += kBlock) {
        const float d = load_half(p), m = load_half(p + 2);
        int q[kBlock];
        unpack_q5(p + 4, q);
        for (std::size_t j = 0; j < kBlock; ++j) dst[j] = float(q[j]) * d + m;
      }
      return;
    case TensorType::kQ4_K:
      for (std::size_t b = 0; b < n / kSuper; ++b, p += kQ4KBytes, dst += kSuper)
        dequantize_q4k_block(p, dst);
      return;
    case TensorType::kQ6_K:
      for (std::size_t b = 0; b < n / kSuper; ++b, p += kQ6KBytes, dst += kSuper)
        dequantize_q6k_block(p, dst);
      return;
  }
}

void quantize_ref(TensorType type, const float* src, void* dst, std::size_t n) {
  require_blocks(type, n, "quantize_ref");
  auto* p = static_cast<std::uint8_t*>(dst);
  switch (type) {
    case TensorType::kF32:
      std::memcpy(p, src, n * sizeof(float));
      return;
    case TensorType::kF16:
      for (std::size_t i = 0; i < n; ++i) store_half(p + 2 * i, src[i]);
      return;
    case TensorType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        const auto bits = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(src[i]));
        std::memcpy(p + 2 * i, &bits, 2);
      }
      return;
    case TensorType::kQ8_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        float amax = 0.0f;
        for (std::size_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(src[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        for (std::size_t j = 0; j < kBlock; ++j)
          p[2 + j] = std::uint8_t(std::int8_t(std::lround(src[j] * id)));
      }
      return;
    case TensorType::kQ4_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        // The value of largest magnitude, sign kept, maps to -8: the full range [-8, 7] is used.
        const float d = signed_absmax(src) / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        auto q = [&](float x) { return std::min(15, int(std::int8_t(x * id + 8.5f))); };
        for (std::size_t j = 0; j < kBlock / 2; ++j)
          p[2 + j] = std::uint8_t(q(src[j]) | (q(src[j + kBlock / 2]) << 4));
      }
      return;
    case TensorType::kQ4_1:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        const std::pair<float, float> range = block_range(src);
        const float lo = range.first, hi = range.second;
        const float d = (hi - lo) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        store_half(p + 2, lo);
        auto q = [&](float x) { return std::min(15, int(std::int8_t((x - lo) * id + 0.5f))); };
        for (std::size_t j = 0; j < kBlock / 2; ++j)
          p[4 + j] = std::uint8_t(q(src[j]) | (q(src[j + kBlock / 2]) << 4));
      }
      return;
    case TensorType::kQ5_0:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        // As Q4_0: the value of largest magnitude, sign kept, maps to -16.
        const float d = signed_absmax(src) / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        int q[kBlock];
        for (std::size_t j = 0; j < kBlock; ++j)
          q[j] = std::min(31, int(std::int8_t(src[j] * id + 16.5f)));
        pack_q5(q, p + 2);
      }
      return;
    case TensorType::kQ5_1:
      for (std::size_t b = 0; b < n / kBlock; ++b, p += block_bytes(type), src += kBlock) {
        const std::pair<float, float> range = block_range(src);
        const float lo = range.first, hi = range.second;
        const float d = (hi - lo) / 31.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        store_half(p, d);
        store_half(p + 2, lo);
        int q[kBlock];
        for (std::size_t j = 0; j < kBlock; ++j)
          q[j] = int(std::uint8_t((src[j] - lo) * id + 0.5f));
        pack_q5(q, p + 4);
      }
      return;
    case TensorType::kQ4_K:
      for (std::size_t b = 0; b < n / kSuper; ++b, p += kQ4KBytes, src += kSuper)
        quantize_q4k_block(src, p);
      return;
    case TensorType::kQ6_K:
      for (std::size_t b = 0; b < n / kSuper; ++b, p += kQ6KBytes, src += kSuper)
        quantize_q6k_block(src, p);
      return;
  }
}

}  // namespace inferlab::kernels
