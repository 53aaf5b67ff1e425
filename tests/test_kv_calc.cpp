#include "test_support.hpp"

// Tests of the KV-cache memory calculator (common/include/inferlab/analysis/kv_calc.hpp): the source
// text's Llama-3-70B numbers to the byte, the other named shapes, the concurrency of a
// deployment, and the units it prints. All values are exact in double arithmetic (integers or
// half-integers far below 2^53), so the checks are exact equalities.

#include <cstdint>
#include <string>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/analysis/kv_sizing.hpp"
#include "inferlab/model/model.hpp"

using inferlab::DType;
using inferlab::Error;
using inferlab::memory_fit;
using inferlab::memory_fit_message;
using inferlab::MemoryFit;
using inferlab::ModelConfig;
using inferlab::named_config;

namespace {
constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0, kGiB = kMiB * 1024.0;
}

TEST_CASE("Llama-3-70B BF16: 327,680 bytes per token, 1.25 GiB at 4K, 40 GiB at 128K",
          "[unit][kv_calc]") {
  const auto c = named_config("llama3-70b");
  REQUIRE(c.n_layers == 80);
  REQUIRE(c.n_kv_heads == 8);
  REQUIRE(c.head_size() == 128);
  // 2 x 80 x 8 x 128 x 2 bytes.
  CHECK(inferlab::kv_bytes_per_token(c, DType::bf16) == 327680.0);
  CHECK(inferlab::kv_bytes_per_token(c, DType::bf16) == 320 * kKiB);
  // 4,096 tokens: 1,342,177,280 bytes = 1.25 GiB = 1,280 MiB. The source writes "1.28 GB":
  // that is 1,280 MiB read as if it were GB; in decimal units it is 1.34 GB.
  CHECK(inferlab::kv_bytes(c, DType::bf16, 4096) == 1342177280.0);
  CHECK(inferlab::kv_bytes(c, DType::bf16, 4096) == 1.25 * kGiB);
  CHECK(inferlab::kv_bytes(c, DType::bf16, 4096) == 1280 * kMiB);
  // 128K = 131,072 tokens: 40 GiB, "half an A100".
  CHECK(inferlab::kv_bytes(c, DType::bf16, 131072) == 40 * kGiB);
  // The text's "100 concurrent 4K requests need 128 GB": 100 x 1.25 GiB = 125 GiB = 134.2 GB.
  CHECK(100 * inferlab::kv_bytes(c, DType::bf16, 4096) == 125 * kGiB);
}

TEST_CASE("every number format, and quantisation scales", "[unit][kv_calc]") {
  const auto c = named_config("llama3-70b");
  CHECK(inferlab::kv_bytes_per_token(c, DType::f32) == 655360.0);
  CHECK(inferlab::kv_bytes_per_token(c, DType::f16) == 327680.0);
  CHECK(inferlab::kv_bytes_per_token(c, DType::fp8) == 163840.0);
  CHECK(inferlab::kv_bytes_per_token(c, DType::int8) == 163840.0);
  CHECK(inferlab::kv_bytes_per_token(c, DType::int4) == 81920.0);  // half a byte per number
  // InferLab's int8 cache keeps a float scale per (token, head) for K and for V:
  // 2 x 80 x 8 x 4 = 5,120 extra bytes per token.
  CHECK(inferlab::kv_bytes_per_token(c, DType::int8, 4.0) == 163840.0 + 5120.0);
  CHECK(inferlab::dtype_bytes(DType::int4) == 0.5);
  for (DType t : inferlab::all_dtypes()) CHECK(inferlab::parse_dtype(inferlab::dtype_name(t)) == t);
  CHECK(inferlab::parse_dtype("f16") == DType::f16);
  CHECK_THROWS_AS(inferlab::parse_dtype("fp6"), Error);
}

TEST_CASE("one DType: every name parses back to its type, other spellings too", "[unit][dtype]") {
  // The printed names are the enumerators'; the KV flags' f32/f16/int8 are among them.
  const std::vector<std::string> names = {"f32", "f16", "bf16", "fp8", "int8", "int4"};
  REQUIRE(inferlab::all_dtypes().size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const DType t = inferlab::all_dtypes()[i];
    CHECK(inferlab::dtype_name(t) == names[i]);
    CHECK(inferlab::parse_dtype(inferlab::dtype_name(t)) == t);
  }
  // Bytes per number, widest first.
  const std::vector<double> bytes = {4.0, 2.0, 2.0, 1.0, 1.0, 0.5};
  for (std::size_t i = 0; i < bytes.size(); ++i)
    CHECK(inferlab::dtype_bytes(inferlab::all_dtypes()[i]) == bytes[i]);
  // The fp spellings and the long ones.
  CHECK(inferlab::parse_dtype("fp32") == DType::f32);
  CHECK(inferlab::parse_dtype("float32") == DType::f32);
  CHECK(inferlab::parse_dtype("fp16") == DType::f16);
  CHECK(inferlab::parse_dtype("float16") == DType::f16);
  CHECK(inferlab::parse_dtype("bfloat16") == DType::bf16);
  REQUIRE_THROWS_WITH(inferlab::parse_dtype("f64"),
                      Catch::Contains("known: f32, f16, bf16, fp8, int8, int4"));
}

TEST_CASE("the other named shapes: GQA stores Nkv heads, MHA stores them all", "[unit][kv_calc]") {
  // Llama-3-8B and Mistral-7B: 2 x 32 x 8 x 128 x 2 = 128 KiB per token.
  CHECK(inferlab::kv_bytes_per_token(named_config("llama3-8b"), DType::bf16) == 128 * kKiB);
  CHECK(inferlab::kv_bytes_per_token(named_config("mistral-7b"), DType::bf16) == 128 * kKiB);
  // Llama-2-7B has no GQA (32 KV heads): 4x as much, 512 KiB per token.
  CHECK(inferlab::kv_bytes_per_token(named_config("llama2-7b"), DType::bf16) == 512 * kKiB);
  // stories15M in float32, as the CPU engine stores it: 2 x 6 x 6 x 48 x 4 = 13,824 bytes.
  CHECK(inferlab::kv_bytes_per_token(named_config("stories15M"), DType::f32) == 13824.0);
  // stories260K: 5 layers, 4 KV heads of 8: 2 x 5 x 4 x 8 x 4 = 1,280 bytes; a full 512-token
  // context is 640 KiB.
  CHECK(inferlab::kv_bytes(named_config("stories260K"), DType::f32, 512) == 640 * kKiB);
  CHECK_THROWS_AS(inferlab::kv_bytes(named_config("stories260K"), DType::f32, -1), Error);
}

TEST_CASE("Llama-3-70B on 4x A100-80GB at 4K context: 133 / 266 / 533 sequences",
          "[unit][kv_calc]") {
  const auto c = named_config("llama3-70b");
  inferlab::ServingBudget b;
  b.memory_bytes_per_device = 80e9;
  b.devices = 4;
  b.weight_dtype = DType::bf16;
  b.context_tokens = 4096;

  b.kv_dtype = DType::f16;
  const auto fp16 = inferlab::max_concurrent_sequences(c, b);
  CHECK(fp16.total_bytes == 320e9);
  CHECK(fp16.weight_bytes == 2.0 * double(c.n_params()));  // ~141.1 GB of BF16 weights
  CHECK(fp16.weight_bytes == Approx(141.1e9).epsilon(1e-3));
  CHECK(fp16.kv_bytes_per_sequence == 1.25 * kGiB);
  CHECK(fp16.kv_budget_bytes == 320e9 - fp16.weight_bytes);
  CHECK(fp16.max_sequences == 133);

  b.kv_dtype = DType::fp8;
  CHECK(inferlab::max_concurrent_sequences(c, b).max_sequences == 266);
  b.kv_dtype = DType::int4;
  const auto int4 = inferlab::max_concurrent_sequences(c, b);
  CHECK(int4.max_sequences == 533);  // about 4x FP16 (the weights stay BF16)

  // vLLM's default gpu_memory_utilization of 0.9 keeps 10 % back: 288 GB usable.
  b.kv_dtype = DType::f16;
  b.reserved_fraction = 0.1;
  CHECK(inferlab::max_concurrent_sequences(c, b).max_sequences == 109);

  // One A100 cannot even hold the BF16 weights.
  b.devices = 1;
  b.reserved_fraction = 0.0;
  const auto one = inferlab::max_concurrent_sequences(c, b);
  CHECK(one.kv_budget_bytes < 0.0);
  CHECK(one.max_sequences == 0);

  b.devices = 0;
  CHECK_THROWS_AS(inferlab::max_concurrent_sequences(c, b), Error);
}

TEST_CASE("format_bytes says which units it prints", "[unit][kv_calc]") {
  CHECK(inferlab::format_bytes(327680.0) == "320 KiB (328 kB)");
  CHECK(inferlab::format_bytes(1342177280.0) == "1.25 GiB (1.34 GB)");
  CHECK(inferlab::format_bytes(40 * kGiB) == "40 GiB (42.9 GB)");
  CHECK(inferlab::format_bytes(512.0) == "512 B");
}

TEST_CASE("memory_fit: Llama-3-70B does not fit on one 80 GB GPU, Llama-3-8B does",
          "[unit][kv_calc]") {
  const ModelConfig big = named_config("llama3-70b");
  // bf16 weights: 2 bytes x n_params; KV: 64 sequences x 4096 tokens x 327,680 bytes.
  const MemoryFit f = memory_fit(big, DType::bf16, DType::bf16, 64, 4096, 80e9);
  CHECK(f.weight_bytes == 2.0 * double(big.n_params()));
  CHECK(f.kv_bytes == 64.0 * 4096 * 327680);
  CHECK(f.needed_bytes == f.weight_bytes + f.kv_bytes);
  CHECK_FALSE(f.fits);
  CHECK_THAT(memory_fit_message(f), Catch::StartsWith("does not fit: needs 227.0 GB") &&
                                        Catch::EndsWith("the device has 80.0 GB"));
  // The boundary is inclusive: exactly the device's bytes fit.
  const MemoryFit exact = memory_fit(big, DType::bf16, DType::bf16, 1, 0, f.weight_bytes);
  CHECK(exact.fits);
  CHECK_FALSE(memory_fit(big, DType::bf16, DType::bf16, 1, 1, f.weight_bytes).fits);
  const MemoryFit small =
      memory_fit(named_config("llama3-8b"), DType::bf16, DType::bf16, 1, 4096, 80e9);
  CHECK(small.fits);
  CHECK_THAT(memory_fit_message(small), Catch::StartsWith("fits: needs 16."));
  CHECK_THROWS_WITH(memory_fit(big, DType::bf16, DType::bf16, 0, 1, 80e9),
                    Catch::Contains("batch 0"));
  CHECK_THROWS_WITH(memory_fit(big, DType::bf16, DType::bf16, 1, -1, 80e9),
                    Catch::Contains("context -1"));
  CHECK_THROWS_WITH(memory_fit(big, DType::bf16, DType::bf16, 1, 1, 0.0),
                    Catch::Contains("positive"));
}

TEST_CASE("sizing table: the fewest 80 GB GPUs that hold the bf16 weights and one sequence",
          "[unit][kv_calc]") {
  using namespace inferlab;
  // Llama-3-70B in bf16 is 141 GB of weights: two 80 GB GPUs are the fewest, whatever the KV type.
  const KVSizingTable t = kv_sizing_table("llama3-70b", 4096);
  CHECK(t.name == "llama3-70b");
  CHECK(t.context_tokens == 4096);
  REQUIRE(t.rows.size() == all_dtypes().size());
  for (const KVSizingRow& r : t.rows) {
    CHECK(r.bytes_per_token == kv_bytes_per_token(t.config, r.dtype));
    CHECK(r.bytes_per_sequence == kv_bytes(t.config, r.dtype, 4096));
    CHECK(r.gpus == 2);
    CHECK_FALSE(r.one_gpu.fits);
    // The answer is the calculator's on that many GPUs, and one fewer holds no sequence.
    ServingBudget b;
    b.kv_dtype = r.dtype;
    b.context_tokens = 4096;
    b.devices = r.gpus;
    CHECK(max_concurrent_sequences(t.config, b).max_sequences == r.max_sequences);
    CHECK(r.max_sequences >= 1);
    b.devices = r.gpus - 1;
    CHECK(max_concurrent_sequences(t.config, b).max_sequences == 0);
  }
  // The search starts where the budget says and stops at the cap.
  ServingBudget small;
  small.memory_bytes_per_device = 1e9;
  CHECK(fewest_devices_for_one_sequence(t.config, small, 8).max_sequences == 0);
  CHECK(small.devices == 8);
  CHECK_THROWS_AS(kv_sizing_table("no-such-model", 4096), Error);
}

TEST_CASE("the calculator predicts the bytes the KV cache allocates, int8 scales included",
          "[unit][kv_calc]") {
  using namespace inferlab;
  const ModelConfig c = named_config("stories260K");
  for (DType t : {DType::f32, DType::f16, DType::int8}) {
    const KVPredictionCheck p = check_kv_prediction(c, t);
    CHECK(p.type == t);
    CHECK(p.allocated_bytes_per_token == KVCache(c, 1, t).bytes_per_token());
    CHECK(p.equal());
  }
  // f32: 2 (K, V) x layers x KV heads x head size x 4 bytes.
  CHECK(check_kv_prediction(c, DType::f32).predicted_bytes_per_token ==
        2.0 * c.n_layers * c.n_kv_heads * c.head_size() * 4);
}
