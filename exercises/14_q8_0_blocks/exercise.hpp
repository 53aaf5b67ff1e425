#pragma once
/// @file exercises/14_q8_0_blocks/exercise.hpp
/// @brief Exercise 14: Q8_0, the 8-bit block format of GGUF files. Quantize floats to blocks,
/// dequantize them back, and take the dot product of a Q8_0 weight row with Q8_0-quantized
/// activations block by block in integers, as llama.cpp's CPU matmul does.
///
/// A block stores 32 consecutive numbers x_0..x_31 in 34 bytes: bytes 0-1 the scale d as an IEEE
/// float16, little-endian; bytes 2..33 the 32 signed 8-bit q_j. A number is read back as
/// q_j * d. Block b of a vector holds its numbers 32 b .. 32 b + 31.

#include <cstdint>
#include <span>
#include <vector>

#include "inferlab/kernels/quant_formats.hpp"

namespace inferlab::ex14 {

/// @brief Numbers per block.
inline constexpr std::size_t kBlockSize = 32;
/// @brief Bytes per block: a float16 scale and 32 int8.
inline constexpr std::size_t kBlockBytes = 34;

/// @brief Given: @p x rounded to the nearest float16 (ties to even), as its 16 bits.
inline std::uint16_t float_to_half(float x) {
  std::uint16_t bits;
  kernels::quantize_ref(kernels::TensorType::kF16, &x, &bits, 1);
  return bits;
}

/// @brief Given: the float value of the float16 with bits @p bits (exact).
inline float half_to_float(std::uint16_t bits) {
  float x;
  kernels::dequantize_ref(kernels::TensorType::kF16, &bits, &x, 1);
  return x;
}

/// @brief Quantizes @p x to Q8_0 blocks, rounding as llama.cpp does (the bytes must be the ones
/// a GGUF file written by llama.cpp holds): per block, amax = max_j |x_j| and d = amax / 127
/// (in float); q_j = x_j * (1 / d) rounded to the nearest integer, halves away from zero (q_j =
/// 0 when d is 0); the stored scale is d rounded to float16.
/// @param x (n) floats, n a multiple of 32
/// @return (n / 32 * 34) bytes: the blocks one after the other
/// @throws inferlab::Error if n is not a multiple of 32.
std::vector<std::uint8_t> quantize_q8_0(std::span<const float> x);

/// @brief Reads Q8_0 blocks back as floats: x_j = q_j * d, d the stored float16 scale.
/// @param blocks (nb * 34) bytes
/// @return (nb * 32) floats
/// @throws inferlab::Error if the size is not a whole number of blocks.
std::vector<float> dequantize_q8_0(std::span<const std::uint8_t> blocks);

/// @brief The dot product of two Q8_0 vectors of the same length, block by block:
///
///     sum_b  d_w[b] * d_a[b] * (sum_j qw[b][j] * qa[b][j])
///
/// with the inner sum of 32 products taken exactly, in integers (it fits an int32), and only
/// one float multiply-add per block.
/// @param weights (nb * 34) bytes: a weight row as Q8_0 blocks
/// @param activations (nb * 34) bytes: the activations, quantized by quantize_q8_0()
/// @return the dot product
/// @throws inferlab::Error if the sizes differ or are not a whole number of blocks.
/// @note 32 integer multiply-adds and 1 float one per block; reads 34 + 34 bytes per 32
/// weights, against 4 bytes per weight for float32 weights.
float dot_q8_0(std::span<const std::uint8_t> weights, std::span<const std::uint8_t> activations);

}  // namespace inferlab::ex14
