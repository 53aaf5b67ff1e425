// Exercise 14, one checked answer: Q8_0 blocks, quantized, dequantized and multiplied.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab::ex14 {

namespace {

float block_scale(const std::uint8_t* block) {
  std::uint16_t bits;
  std::memcpy(&bits, block, 2);  // little-endian, as the machines this runs on
  return half_to_float(bits);
}

}  // namespace

std::vector<std::uint8_t> quantize_q8_0(std::span<const float> x) {
  if (x.size() % kBlockSize != 0)
    throw Error("quantize_q8_0: " + std::to_string(x.size()) + " numbers are not whole blocks");
  std::vector<std::uint8_t> out(x.size() / kBlockSize * kBlockBytes);
  for (std::size_t b = 0; b < x.size() / kBlockSize; ++b) {
    const float* xb = x.data() + b * kBlockSize;
    std::uint8_t* block = out.data() + b * kBlockBytes;
    float amax = 0.0f;
    for (std::size_t j = 0; j < kBlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    // The largest magnitude maps to +-127: the whole int8 range but -128, so that the format
    // stays symmetric. The integers are rounded with the float scale, before it is stored in
    // float16, exactly as llama.cpp does.
    const float d = amax / 127.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t bits = float_to_half(d);
    std::memcpy(block, &bits, 2);
    for (std::size_t j = 0; j < kBlockSize; ++j)
      block[2 + j] = std::uint8_t(std::int8_t(std::lround(xb[j] * inv)));
  }
  return out;
}

std::vector<float> dequantize_q8_0(std::span<const std::uint8_t> blocks) {
  if (blocks.size() % kBlockBytes != 0)
    throw Error("dequantize_q8_0: " + std::to_string(blocks.size()) +
                " bytes are not whole 34-byte blocks");
  std::vector<float> out(blocks.size() / kBlockBytes * kBlockSize);
  for (std::size_t b = 0; b < blocks.size() / kBlockBytes; ++b) {
    const std::uint8_t* block = blocks.data() + b * kBlockBytes;
    const float d = block_scale(block);
    for (std::size_t j = 0; j < kBlockSize; ++j)
      out[b * kBlockSize + j] = float(std::int8_t(block[2 + j])) * d;
  }
  return out;
}

float dot_q8_0(std::span<const std::uint8_t> weights, std::span<const std::uint8_t> activations) {
  if (weights.size() != activations.size() || weights.size() % kBlockBytes != 0)
    throw Error("dot_q8_0: " + std::to_string(weights.size()) + " and " +
                std::to_string(activations.size()) + " bytes (equal sizes, whole 34-byte blocks)");
  float sum = 0.0f;
  for (std::size_t b = 0; b < weights.size() / kBlockBytes; ++b) {
    const std::uint8_t* w = weights.data() + b * kBlockBytes;
    const std::uint8_t* a = activations.data() + b * kBlockBytes;
    // At most 32 * 127 * 127 = 516,128 in magnitude: exact in an int32.
    std::int32_t dot = 0;
    for (std::size_t j = 0; j < kBlockSize; ++j)
      dot += std::int32_t(std::int8_t(w[2 + j])) * std::int32_t(std::int8_t(a[2 + j]));
    sum += block_scale(w) * block_scale(a) * float(dot);
  }
  return sum;
}

}  // namespace inferlab::ex14
