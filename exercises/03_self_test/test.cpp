// Exercise 03's test: each answer must match the exact arithmetic on the documented constants
// (relative tolerance 1e-9), and land within a stated tolerance of the rounded value the chapter
// gives (the text rounds to two significant figures or so).

#include <cmath>

#include <catch2/catch.hpp>

#include "exercise.hpp"

namespace ex = inferlab::ex03;
using ex::kA100Sxm80;
using ex::kBf16Bytes;
using ex::kH100Sxm;
using ex::kLlama3_8bParams;

namespace {

/// Exact arithmetic on the constants, up to floating-point rounding.
Approx exactly(double expected) { return Approx(expected).epsilon(1e-9); }

}  // namespace

TEST_CASE("ridge points: ~295 FLOP/byte on H100, ~156 on A100", "[exercise][ex03]") {
  CHECK(ex::ridge_point(kH100Sxm) == exactly(989.0 / 3.35));   // 295.2
  CHECK(ex::ridge_point(kA100Sxm80) == exactly(312.0 / 2.0));  // 156
  CHECK(std::abs(ex::ridge_point(kH100Sxm) - 295.0) < 1.0);    // the text: ~295
  // The newer GPU needs a larger batch before it becomes compute-bound.
  CHECK(ex::ridge_point(kH100Sxm) > ex::ridge_point(kA100Sxm80));
}

TEST_CASE("A100 -> H100: batch-1 decode ~1.7x faster (bandwidth), prefill ~3.2x (FLOP/s)",
          "[exercise][ex03]") {
  const double decode = ex::decode_speedup(kA100Sxm80, kH100Sxm);
  const double prefill = ex::prefill_speedup(kA100Sxm80, kH100Sxm);
  CHECK(decode == exactly(3.35 / 2.0));      // 1.675
  CHECK(prefill == exactly(989.0 / 312.0));  // 3.170
  CHECK(std::abs(decode - 1.7) < 0.05);      // the text: ~1.7x
  CHECK(std::abs(prefill - 3.2) < 0.05);     // the text: ~3.2x (an upper bound)
  // Going back is the inverse: a ratio, not a difference.
  CHECK(ex::decode_speedup(kH100Sxm, kA100Sxm80) == exactly(2.0 / 3.35));
  CHECK(ex::decode_speedup(kH100Sxm, kH100Sxm) == exactly(1.0));
}

TEST_CASE("min-p thresholds of the worked example: 0.06 and 0.005", "[exercise][ex03]") {
  CHECK(ex::min_p_threshold(0.1, 0.6) == exactly(0.06));    // a confident model: strict cut
  CHECK(ex::min_p_threshold(0.1, 0.05) == exactly(0.005));  // an unsure one: a loose cut
  CHECK(ex::min_p_threshold(0.0, 0.6) == 0.0);              // min_p 0 disables the filter
}

TEST_CASE("Llama-3-8B on H100: ~4.8 ms per batch-1 decode step, ~99.7% of the ALUs idle",
          "[exercise][ex03]") {
  const double step = ex::decode_seconds_per_token(kLlama3_8bParams, kBf16Bytes, kH100Sxm);
  CHECK(step == exactly(16e9 / 3.35e12));          // 16 GB of BF16 weights / 3.35 TB/s = 4.78 ms
  CHECK(std::abs(step - 4.8e-3) < 0.05e-3);        // the text: ~4.8 ms
  CHECK(1.0 / step == Approx(209.4).margin(0.1));  // at most ~209 tokens/s for one user

  // The arithmetic of that token (2 FLOPs per parameter) would take 0.016 ms at peak.
  const double compute = ex::prefill_seconds(kLlama3_8bParams, 1.0, kH100Sxm);
  CHECK(compute == exactly(1.6e10 / 989e12));
  CHECK(1.0 - compute / step == Approx(0.997).margin(0.001));  // the text: ~99.7% idle
}

TEST_CASE("Llama-3-8B on H100: decode turns compute-bound near B ~ 295", "[exercise][ex03]") {
  const double batch = ex::critical_batch_size(kLlama3_8bParams, kBf16Bytes, kH100Sxm);
  CHECK(batch == exactly(989.0 / 3.35));  // for BF16 it reduces to the ridge point
  CHECK(std::abs(batch - 295.0) < 1.0);   // ~295 (297 if the step time is rounded to 4.8 ms first)
  // 8-bit weights halve the bytes read, so the crossover comes at half the batch.
  CHECK(ex::critical_batch_size(kLlama3_8bParams, 1.0, kH100Sxm) == exactly(0.5 * 989.0 / 3.35));
}

TEST_CASE("Llama-3-8B on H100: a 2,000-token prefill takes ~32 ms at peak", "[exercise][ex03]") {
  const double prefill = ex::prefill_seconds(kLlama3_8bParams, 2000.0, kH100Sxm);
  CHECK(prefill == exactly(3.2e13 / 989e12));  // 3.2e13 FLOPs -> 32.4 ms
  CHECK(std::abs(prefill - 32e-3) < 0.5e-3);   // the text: 32 ms
}

TEST_CASE("a TPOT of 50 ms streams 20 tokens/s to its user", "[exercise][ex03]") {
  CHECK(ex::streaming_tokens_per_second(0.050) == exactly(20.0));
}
