// Exercise 06's test: chapter 03's roofline, exact to the arithmetic on the documented
// constants (relative 1e-9), within a stated tolerance of the rounded figures in the README, and
// in agreement with the core's cost model (inferlab/analysis/roofline.hpp) wherever it computes the same
// quantity.

#include <string>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/analysis/roofline.hpp"

namespace ex = inferlab::ex06;
using ex::kA100;
using ex::kH100;

namespace {
Approx exactly(double expected) { return Approx(expected).epsilon(1e-9); }
}  // namespace

TEST_CASE("the roofline: min(peak, bandwidth x intensity), as the core draws it",
          "[exercise][ex06]") {
  CHECK(ex::attainable_flops(1.0, kH100) == exactly(3.35e12));  // batch-1 decode: 0.3% of peak
  CHECK(ex::attainable_flops(989.0 / 3.35, kH100) == exactly(989e12));  // the ridge: both roofs
  CHECK(ex::attainable_flops(1000.0, kH100) == exactly(989e12));        // past it: the flat roof
  // Every accelerator of the core's table, from far below to far above its ridge.
  for (const inferlab::Hardware& hw : inferlab::hardware_table()) {
    const ex::Gpu gpu{hw.name.c_str(), hw.peak_flops, hw.bandwidth};
    for (double intensity : {0.25, 1.0, 8.0, 100.0, hw.ridge_point(), 1000.0, 1e5}) {
      INFO(hw.name << " at " << intensity << " FLOP/byte");
      CHECK(ex::attainable_flops(intensity, gpu) ==
            exactly(inferlab::attainable_flops(hw, intensity)));
    }
  }
}

TEST_CASE("step times: flat below the critical batch, growing above it", "[exercise][ex06]") {
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 1, kH100) ==
        exactly(16e9 / 3.35e12));  // 4.78 ms
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 1, kA100) ==
        exactly(16e9 / 2.0e12));  // 8 ms
  // Below the critical batch the step does not get longer with more sequences...
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 64, kH100) == exactly(16e9 / 3.35e12));
  // ... above it, it grows with the batch.
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 512, kH100) ==
        exactly(2 * 8e9 * 512 / 989e12));
  // A 2,000-token prefill is a step of 2,000 tokens: compute-bound, 32.4 ms at peak.
  CHECK(ex::decode_step_seconds(ex::kParams, ex::kBf16, 2000, kH100) == exactly(3.2e13 / 989e12));
}

TEST_CASE("A100 -> H100: the gain depends on the batch", "[exercise][ex06]") {
  // Batch 1 is memory-bound on both: exercise 03's bandwidth ratio, ~1.7.
  const double one = ex::decode_speedup(kA100, kH100, 1);
  CHECK(one == exactly(3.35 / 2.0));
  CHECK(one == Approx(1.7).margin(0.05));
  // Batch 512 is compute-bound on both: the FLOP/s ratio, ~3.2, as for a prefill.
  const double big = ex::decode_speedup(kA100, kH100, 512);
  CHECK(big == exactly(989.0 / 312.0));
  CHECK(big == Approx(3.2).margin(0.05));
  // Batch 200 is past the A100's ridge (156) but below the H100's (295): compute-bound on one,
  // memory-bound on the other, and the gain lies in between, ~2.1.
  const double mid = ex::decode_speedup(kA100, kH100, 200);
  CHECK(mid == exactly((2 * 8e9 * 200 / 312e12) / (16e9 / 3.35e12)));
  CHECK(mid == Approx(2.1).margin(0.05));
  // The gain never falls as the batch grows, and stays between the two ratios.
  double previous = 0.0;
  for (int batch = 1; batch <= 1024; batch *= 2) {
    INFO("batch " << batch);
    const double s = ex::decode_speedup(kA100, kH100, batch);
    CHECK(s >= previous * (1 - 1e-12));
    CHECK(s >= one * (1 - 1e-12));
    CHECK(s <= big * (1 + 1e-12));
    previous = s;
  }
}

TEST_CASE("linear layers batch, decode attention does not", "[exercise][ex06]") {
  // A d x d BF16 layer: ~B FLOP/byte.
  CHECK(ex::linear_intensity(1, 4096, 2.0) ==
        exactly(2.0 * 4096 * 4096 / (2.0 * (4096.0 * 4096 + 2 * 4096))));
  CHECK(ex::linear_intensity(1, 4096, 2.0) == Approx(1.0).epsilon(1e-3));
  CHECK(ex::linear_intensity(256, 8192, 2.0) == Approx(256.0).epsilon(0.06));
  // The core's linear_cost counts the same FLOPs and bytes.
  for (int batch : {1, 7, 64, 512, 4096}) {
    for (int d : {64, 288, 4096}) {
      INFO("batch " << batch << ", d " << d);
      const inferlab::OpCost core =
          inferlab::linear_cost("w", batch, d, d, inferlab::DType::bf16, inferlab::DType::bf16);
      CHECK(ex::linear_intensity(batch, d, 2.0) == exactly(core.intensity()));
    }
  }
  // Decode attention in BF16: 1 FLOP/byte for multi-head attention at batch 1 AND at batch 256...
  CHECK(ex::decode_attention_intensity(1, 4096, 32, 32, 128, 2.0) == exactly(1.0));
  CHECK(ex::decode_attention_intensity(256, 4096, 32, 32, 128, 2.0) == exactly(1.0));
  // ... g = 8 FLOP/byte with Llama-3-70B's 64 query heads on 8 KV heads, whatever the batch.
  CHECK(ex::decode_attention_intensity(1, 4096, 64, 8, 128, 2.0) == exactly(8.0));
  CHECK(ex::decode_attention_intensity(64, 1000, 64, 8, 128, 2.0) == exactly(8.0));
  // The core's long-context limit for every named model shape: 2 g / bytes.
  for (const std::string& name : inferlab::named_config_names()) {
    INFO(name);
    const inferlab::ModelConfig c = inferlab::named_config(name);
    CHECK(ex::decode_attention_intensity(16, 2048, c.n_heads, c.n_kv_heads, c.head_size(), 2.0) ==
          exactly(inferlab::decode_attention_intensity_limit(c, inferlab::DType::bf16)));
  }
  // On an H100 (ridge ~295 FLOP/byte) attention stays deeply memory-bound, while the MLP at
  // B = 256 is close to the ridge.
  CHECK(ex::decode_attention_intensity(256, 4096, 64, 8, 128, 2.0) < 0.05 * 989.0 / 3.35);
}

TEST_CASE("the KV cache's share of a decode step's bytes grows with batch and context",
          "[exercise][ex06]") {
  // The weights are shared by the batch, the KV cache is not.
  CHECK(ex::kv_byte_share(16e9, 1, 1000, 131072) == exactly(131072e3 / (16e9 + 131072e3)));
  CHECK(ex::kv_byte_share(16e9, 64, 4096, 131072) ==
        exactly(64 * 4096 * 131072.0 / (16e9 + 64 * 4096 * 131072.0)));
  CHECK(ex::kv_byte_share(16e9, 0, 4096, 131072) == 0.0);
  // Chapter 03's question: Llama-3-70B, BF16, 64 sequences of 4,096 tokens. The core counts the
  // weights one step reads (the embedding table only one row per token) and the KV bytes.
  const inferlab::ModelConfig c = inferlab::named_config("llama3-70b");
  const inferlab::Hardware h200 = inferlab::hardware_by_name("h200");
  for (int batch : {1, 8, 64, 256}) {
    for (std::int64_t context : {512, 4096, 32768}) {
      INFO("batch " << batch << ", context " << context);
      inferlab::StepShape shape;
      for (int b = 0; b < batch; ++b) shape.add_decode(context);
      const inferlab::StepCost step = inferlab::step_cost(c, h200, shape);
      const double share =
          ex::kv_byte_share(step.weight_bytes, batch, double(context),
                            inferlab::kv_bytes_per_token(c, inferlab::DType::bf16));
      CHECK(share == exactly(step.kv_bytes / (step.weight_bytes + step.kv_bytes)));
    }
  }
  // At 64 x 4,096 the cache is already ~38% of the bytes; at 256 x 4,096 it is most of them.
  const double w = inferlab::weight_bytes_per_step(c);
  const double kv = inferlab::kv_bytes_per_token(c, inferlab::DType::bf16);
  CHECK(ex::kv_byte_share(w, 64, 4096, kv) == Approx(0.38).margin(0.01));
  CHECK(ex::kv_byte_share(w, 256, 4096, kv) > 0.7);
}
