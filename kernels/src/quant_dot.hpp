#pragma once
// Rungs 2 and 3 of the quantized matmul (quant_matmul.hpp): the activations quantized to 8-bit
// blocks, and the dot products of one weight row with up to kTile tokens' blocks, one set of
// functions per instruction set (quant_dot_x86.inc, compiled once per target).
#include <cstddef>
#include <cstdint>

#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/kernels/quant_matmul.hpp"

namespace inferlab::kernels::quant_dot {

// Numbers per block of the 32-blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) and their activations.
constexpr int kBlock = 32;
// Tokens one call of a row dot serves (rung 3's tile; rung 2 passes one).
constexpr int kTile = 8;
// Weight rows one call of a row dot serves.
constexpr int kRows = 4;

// One block of 32 activations: x[j] ~ q[j] * d, and s = d * (q[0] + ... + q[31]) (the term a
// weight block's minimum multiplies). bias[l] = -offset * (q[4l] + ... + q[4l+3]), offset
// being what the weight format adds to make its numbers unsigned (weight_offset()): the VNNI
// path multiplies the unsigned weights w + offset and starts its lanes at bias, which gives
// the lanes of w exactly.
struct ActBlock {
  float d;
  float s;
  std::int8_t q[kBlock];
  std::int32_t bias[8];
};

// 128 for Q8_0 (int8 + 128), 8 for Q4_0 (its nibbles are w + 8), 16 for Q5_0 (its 5-bit
// numbers are w + 16), 0 for the others.
int weight_offset(TensorType type);

// Quantizes n activations (n a multiple of kBlock) to n / kBlock blocks: d = amax / 127,
// q = x / d rounded to nearest (ties to even), as llama.cpp's Q8_0 activations; bias for the
// weights' offset.
void quantize_activations(const float* x, int n, int offset, ActBlock* out);

// out[r * kTile + c] = dot of weight row r (nb blocks of type at row + r * row_bytes) with
// token c's nb activation blocks (act + c * nb), r < rows <= kRows, c < count <= kTile. Every
// path forms, per block b, 8 integer lanes (lane l the sum of the 4 products 4l .. 4l+3) and
// adds them into one of two sets of 8 float lanes, set k = b % 2 (two blocks per loop step, so
// two independent chains), as acc[k][l] = fma(d_w * d_a, float(lane[l]), acc[k][l]), a weight
// minimum m_w as extra[k] = fma(m_w, s_a, extra[k]), and returns, with
// v[l] = acc[0][l] + acc[1][l],
// ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)) + (extra[0] + extra[1]): the same bits on
// every path, for every rows and count (the SIMD paths keep several rows and tokens in
// registers at once, each pair with its own chains).
using RowDot = void (*)(const std::uint8_t* row, std::size_t row_bytes, int rows,
                        const ActBlock* act, int nb, int count, float* out);

// The row dot of type on isa; nullptr for a type without an integer form (or a K-quant).
RowDot row_dot(TensorType type, QuantIsa isa);
RowDot row_dot_scalar(TensorType type);
RowDot row_dot_avx2(TensorType type);
RowDot row_dot_avx512_vnni(TensorType type);

// ---- F16 and BF16: 16-bit float weights against float activations -------------------------

// out[r * kTile + c] = dot of weight row r (n 16-bit floats) with token c's n float activations
// (x + c * n), r < rows <= kRows, c < count <= kTile. No activation rounding: each weight is
// converted to float (exactly) and number i is multiplied-added into lane i % 8 of chain
// (i / 8) % 2, as acc[k][l] = fma(w[i], x[i], acc[k][l]); with v[l] = acc[0][l] + acc[1][l] it
// returns ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)), RowDot's order: the same bits on
// every path, for every rows and count. The SIMD paths take 16 numbers per step (chain 0's 8,
// then chain 1's) and the last n % 16 zero-padded: 0 * 0 leaves a lane as it was.
using RowDotF = void (*)(const std::uint8_t* row, std::size_t row_bytes, int rows,
                         const float* x, int n, int count, float* out);

// The float row dot of type on isa; nullptr for a type other than F16 and BF16.
RowDotF row_dot_f(TensorType type, QuantIsa isa);
RowDotF row_dot_f_scalar(TensorType type);
RowDotF row_dot_f_avx2(TensorType type);
RowDotF row_dot_f_avx512_vnni(TensorType type);

// ---- The K-quants (Q4_K, Q6_K): super-blocks of 256, llama.cpp's Q8_K activations ----------

// Numbers per K-quant super-block and per activation super-block.
constexpr int kSuper = 256;

// 256 activations: x[j] ~ q[j] * d (d = amax / 127 over the 256, as ActBlock's over 32), and
// sums[k] = q[32k] + ... + q[32k + 31], what Q4_K's minimum of sub-block k multiplies.
struct ActSuper {
  float d;
  std::int8_t q[kSuper];
  std::int16_t sums[kSuper / kBlock];
};

// Quantizes n activations (n a multiple of kSuper) to n / kSuper super-blocks, rounding as
// quantize_activations().
void quantize_activations(const float* x, int n, ActSuper* out);

// out[r * kTile + c] = dot of weight row r (nb super-blocks) with token c's nb activation
// super-blocks, as RowDot. Every path forms, per super-block, 8 integer lanes: lane l the sum
// over the 8 runs of 32 (k = 0..7) of sc * (w[32k + 4l] * q[32k + 4l] + ... 3 more), sc the
// scale of the sub-block those 4 numbers are in and w the weight without its scale (Q4_K's
// nibble, Q6_K's q - 32); and for Q4_K the integer imin = sum over k of m[k] * sums[k]. It
// adds them into one set of 8 float lanes and a float as
// acc[l] = fma(d_w * d_a, float(lane[l]), acc[l]) and extra = fma(dmin_w * d_a, float(imin),
// extra), one super-block after the other, and returns
// ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)) - extra: the same bits
// on every path. The integers are exact: a lane is at most 8 * 4 * 63 * 15 * 127 (Q4_K) or
// 8 * 4 * 128 * 32 * 127 (Q6_K) in size, far inside int32.
using RowDotK = void (*)(const std::uint8_t* row, std::size_t row_bytes, int rows,
                         const ActSuper* act, int nb, int count, float* out);

// The K-quant row dot of type on isa; nullptr for a type that is not a K-quant.
RowDotK row_dot_k(TensorType type, QuantIsa isa);
RowDotK row_dot_k_scalar(TensorType type);
RowDotK row_dot_k_avx2(TensorType type);
RowDotK row_dot_k_avx512_vnni(TensorType type);

// Sub-block s's 6-bit scale and minimum from Q4_K's 12 packed bytes (layout in
// quant_formats.hpp).
inline void q4k_scale_min(const std::uint8_t* packed, int s, int* scale, int* min) {
  if (s < 4) {
    *scale = packed[s] & 63;
    *min = packed[s + 4] & 63;
  } else {
    *scale = (packed[s + 4] & 0x0F) | ((packed[s - 4] >> 6) << 4);
    *min = (packed[s + 4] >> 4) | ((packed[s] >> 6) << 4);
  }
}

// IEEE half to float (exact).
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  std::uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exp = 113;
    while ((man & 0x400) == 0) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3FF) << 13);
  }
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

inline float load_half(const std::uint8_t* p) {
  std::uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return half_to_float(h);
}

// A bfloat16 to float (exact): its 16 bits are the top half of float's.
inline float load_bf16(const std::uint8_t* p) {
  std::uint16_t h;
  __builtin_memcpy(&h, p, 2);
  const std::uint32_t bits = std::uint32_t(h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

}  // namespace inferlab::kernels::quant_dot
