// Exercise 14, the learner's file: Q8_0 blocks, quantized, dequantized and multiplied.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex14_q8_0_blocks_test
//   ./build-exercises/bin/ex14_q8_0_blocks_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex14 {

std::vector<std::uint8_t> quantize_q8_0(std::span<const float> x) {
  // TODO(exercise): refuse a length that is not whole blocks; per block, the float16 scale and
  //                 32 int8, rounded as exercise.hpp says.
  (void)x;
  return {};
}

std::vector<float> dequantize_q8_0(std::span<const std::uint8_t> blocks) {
  // TODO(exercise): refuse a size that is not whole blocks; q * d for every number.
  (void)blocks;
  return {};
}

float dot_q8_0(std::span<const std::uint8_t> weights, std::span<const std::uint8_t> activations) {
  // TODO(exercise): refuse sizes that differ or are not whole blocks; per block an exact
  //                 integer sum of products, then one multiply by both scales.
  (void)weights;
  (void)activations;
  return 0.0f;
}

}  // namespace inferlab::ex14
