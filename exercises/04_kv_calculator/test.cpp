// Exercise 04's test: the source text's Llama-3-70B numbers to the byte, the concurrency on
// 4x A100-80GB for FP16 / FP8 / INT4 caches, and agreement with the core's calculator
// (inferlab/analysis/kv_calc.hpp) on every named shape.

#include <string>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/model/model.hpp"

namespace ex = inferlab::ex04;
using ex::kLlama3_70b;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}

TEST_CASE("Llama-3-70B: 327,680 bytes per token in FP16, half in FP8, a quarter in INT4",
          "[exercise][ex04]") {
  CHECK(ex::kv_bytes_per_token(kLlama3_70b, ex::kFp16Bytes) == 327680.0);  // 320 KiB
  CHECK(ex::kv_bytes_per_token(kLlama3_70b, ex::kFp8Bytes) == 163840.0);
  CHECK(ex::kv_bytes_per_token(kLlama3_70b, ex::kInt4Bytes) == 81920.0);
}

TEST_CASE("one sequence: 1.25 GiB at 4K tokens, 40 GiB at 128K (FP16)", "[exercise][ex04]") {
  // The source writes 1.28 GB: that is 1,280 MiB. In decimal units it is 1.34 GB.
  CHECK(ex::kv_bytes_per_sequence(kLlama3_70b, ex::kFp16Bytes, 4096) == 1.25 * kGiB);
  CHECK(ex::kv_bytes_per_sequence(kLlama3_70b, ex::kFp16Bytes, 131072) == 40.0 * kGiB);
  CHECK(ex::kv_bytes_per_sequence(kLlama3_70b, ex::kInt4Bytes, 4096) == 0.3125 * kGiB);
  CHECK(ex::kv_bytes_per_sequence(kLlama3_70b, ex::kFp16Bytes, 0) == 0.0);
}

TEST_CASE("4x A100-80GB at a 4K context: 133 (FP16), 266 (FP8), 533 (INT4) sequences",
          "[exercise][ex04]") {
  auto fits = [](double kv_bytes) {
    return ex::max_concurrent_sequences(kLlama3_70b, ex::kFp16Bytes, kv_bytes, 4096, 4,
                                        ex::kA100MemoryBytes);
  };
  // 320 GB - 141.1 GB of FP16 weights = 178.9 GB for the caches.
  const long long fp16 = fits(ex::kFp16Bytes), fp8 = fits(ex::kFp8Bytes),
                  int4 = fits(ex::kInt4Bytes);
  CHECK(fp16 == 133);
  CHECK(fp8 == 266);
  CHECK(int4 == 533);
  // "INT4 should be about 4x": the weights stay FP16, so only the per-sequence cost changes.
  CHECK(double(int4) / double(fp16) == Approx(4.0).epsilon(0.01));
  // The FP16 weights alone (141 GB) do not fit on one A100; on two, 14 sequences fit.
  CHECK(ex::max_concurrent_sequences(kLlama3_70b, ex::kFp16Bytes, ex::kFp16Bytes, 4096, 1,
                                     ex::kA100MemoryBytes) == 0);
  CHECK(ex::max_concurrent_sequences(kLlama3_70b, ex::kFp16Bytes, ex::kFp16Bytes, 4096, 2,
                                     ex::kA100MemoryBytes) == 14);
  // A 128K context: 40 GiB each, only 4 fit on the four GPUs.
  CHECK(ex::max_concurrent_sequences(kLlama3_70b, ex::kFp16Bytes, ex::kFp16Bytes, 131072, 4,
                                     ex::kA100MemoryBytes) == 4);
}

TEST_CASE("agrees with the core's calculator on every named shape", "[exercise][ex04]") {
  for (const std::string& name : inferlab::named_config_names()) {
    const inferlab::ModelConfig c = inferlab::named_config(name);
    const ex::KvModel m{name.c_str(), c.n_layers, c.n_kv_heads, c.head_size(),
                        double(c.n_params())};
    INFO(name);
    CHECK(ex::kv_bytes_per_token(m, 2.0) == inferlab::kv_bytes_per_token(c, inferlab::DType::bf16));
    CHECK(ex::kv_bytes_per_sequence(m, 0.5, 1000) ==
          inferlab::kv_bytes(c, inferlab::DType::int4, 1000));
  }
}
