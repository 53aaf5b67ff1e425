// Exercise 06's test: the self-test answers through the roofline model, exact to the
// arithmetic on the documented constants (relative 1e-9) and within a stated tolerance of the
// rounded figures the chapter prints.

#include <catch2/catch.hpp>

#include "exercise.hpp"

namespace ex = inferlab::ex06;
using ex::kA100;
using ex::kH100;

namespace {
Approx exactly(double expected) { return Approx(expected).epsilon(1e-9); }
}  // namespace

TEST_CASE("step times: batch-1 decode reads 16 GB; a prefill is compute-bound", "[exercise][ex06]") {
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 1, kH100) == exactly(16e9 / 3.35e12));  // 4.78 ms
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 1, kA100) == exactly(16e9 / 2.0e12));   // 8 ms
  // Below the critical batch the step does not get longer with more sequences...
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 64, kH100) == exactly(16e9 / 3.35e12));
  // ... above it, it grows with the batch.
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 512, kH100) == exactly(2 * 8e9 * 512 / 989e12));
  CHECK(ex::prefill_seconds(ex::kParams, ex::kBf16, 2000, kH100) == exactly(3.2e13 / 989e12));  // 32.4 ms
  CHECK(ex::prefill_seconds(ex::kParams, ex::kBf16, 1, kH100) ==
        ex::decode_step_seconds(ex::kParams, ex::kBf16, 1, kH100));
}

TEST_CASE("A100 -> H100: batch-1 decode ~1.7x, a 2,000-token prefill ~3.2x", "[exercise][ex06]") {
  const double decode = ex::decode_speedup(kA100, kH100, 1);
  const double prefill = ex::prefill_speedup(kA100, kH100, 2000);
  CHECK(decode == exactly(3.35 / 2.0));     // the bandwidth ratio
  CHECK(prefill == exactly(989.0 / 312.0));  // the FLOP/s ratio
  CHECK(decode == Approx(1.7).margin(0.05));
  CHECK(prefill == Approx(3.2).margin(0.05));
  // A large decode batch is compute-bound on both GPUs: it gains like a prefill.
  CHECK(ex::decode_speedup(kA100, kH100, 512) == exactly(989.0 / 312.0));
  // In between (B = 200: compute-bound on the A100, still memory-bound on the H100) the gain is
  // in between too.
  const double mid = ex::decode_speedup(kA100, kH100, 200);
  CHECK(mid == exactly((2 * 8e9 * 200 / 312e12) / (16e9 / 3.35e12)));
  CHECK(mid > decode);
  CHECK(mid < prefill);
}

TEST_CASE("linear layers batch, decode attention does not", "[exercise][ex06]") {
  // A d x d BF16 layer: ~B FLOP/byte.
  CHECK(ex::linear_intensity(1, 4096, 2.0) == exactly(2.0 * 4096 * 4096 / (2.0 * (4096.0 * 4096 + 2 * 4096))));
  CHECK(ex::linear_intensity(1, 4096, 2.0) == Approx(1.0).epsilon(1e-3));
  CHECK(ex::linear_intensity(256, 8192, 2.0) == Approx(256.0).epsilon(0.06));
  // Decode attention in BF16: 1 FLOP/byte for multi-head attention at batch 1 AND at batch 256...
  CHECK(ex::decode_attention_intensity(1, 4096, 32, 32, 128, 2.0) == exactly(1.0));
  CHECK(ex::decode_attention_intensity(256, 4096, 32, 32, 128, 2.0) == exactly(1.0));
  // ... g = 8 FLOP/byte with Llama-3-70B's 64 query heads on 8 KV heads, whatever the batch.
  CHECK(ex::decode_attention_intensity(1, 4096, 64, 8, 128, 2.0) == exactly(8.0));
  CHECK(ex::decode_attention_intensity(64, 1000, 64, 8, 128, 2.0) == exactly(8.0));
  // On an H100 (ridge ~295 FLOP/byte) that stays deeply memory-bound, while the MLP at B = 256
  // is close to the ridge.
  CHECK(ex::decode_attention_intensity(256, 4096, 64, 8, 128, 2.0) < 0.05 * 989.0 / 3.35);
}

TEST_CASE("TPOT 50 ms from TTFT 0.5 s and E2E 10.5 s over 201 tokens: 20 tokens/s per user",
          "[exercise][ex06]") {
  const double t = ex::tpot(0.5, 10.5, 201);
  CHECK(t == exactly(0.05));
  CHECK(ex::per_user_tokens_per_second(t) == exactly(20.0));
  // E2E = TTFT + (N - 1) TPOT, the identity behind the formula.
  CHECK(0.5 + 200 * t == exactly(10.5));
  CHECK(ex::tpot(1.0, 2.0, 2) == exactly(1.0));  // two tokens: one gap
}
