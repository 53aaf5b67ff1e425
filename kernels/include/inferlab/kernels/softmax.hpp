#pragma once
/// @file softmax.hpp
/// @brief Numerically stable softmax over each row (the max is subtracted first).

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace inferlab::kernels {

/// @brief exp(x) for softmax arguments (x = score - max <= 0), in a form a compiler can
/// vectorise: Cephes' single-precision polynomial, no branch, no library call (std::exp is one
/// call per element). Used by the attention kernels.
/// @param x the argument; values below -87 are clamped to -87 (e^-87 = 1.6e-38, a weight that
/// vanishes next to the max's 1). Defined for x <= 0 only: a positive x is read as -x.
/// @return e^x with a relative error below 2e-7 on [-87, 0] (tested against std::exp).
inline float softmax_exp(float x) {
  // Clamp to [-87, 0] on the bits (|x| as an integer, sign forced negative): a float compare
  // would keep GCC from vectorising the loop unless -fno-trapping-math.
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  b = std::min<std::uint32_t>(b & 0x7fffffffu, 0x42ae0000u /* 87.0f */) | 0x80000000u;
  std::memcpy(&x, &b, sizeof x);
  // n = floor(x / ln 2 + 1/2): the argument plus 128 is positive, where truncation is floor.
  const int n = static_cast<int>(x * 1.44269504088896341f + 128.5f) - 128;
  const float fn = static_cast<float>(n);
  const float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;  // x - n ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;                                      // e^r
  std::uint32_t bits = static_cast<std::uint32_t>(n + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/// @brief Reference. x (rows, n) in place.
void softmax_ref(float* x, int rows, int n);
/// @brief Fast CPU version.
void softmax_cpu(float* x, int rows, int n);

}  // namespace inferlab::kernels
