// The KV cache: storage types, the cached loop's agreement with the naive loop, and the
// quality cost of f16 and int8 storage.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/analysis/kv_calc.hpp"
#include "model_cases.hpp"
#include "test_support.hpp"

using namespace inferlab;
using kernels::KVRowsView;

namespace {

std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace

TEST_CASE("kv_store_rows / kv_load_rows round-trip within each type's precision", "[unit][kv]") {
  const int rows = 33, heads = 4, hs = 31;
  const auto x = random_vector(std::size_t(rows) * heads * hs, 1, 3.0f);
  for (DType t : {DType::f32, DType::f16, DType::int8}) {
    std::vector<std::uint8_t> data(x.size() * kernels::kv_element_bytes(t));
    std::vector<float> scales(std::size_t(rows) * heads), back(x.size());
    kernels::kv_store_rows(t, data.data(), scales.data(), x.data(), rows, heads, hs);
    kernels::kv_load_rows(t, back.data(), data.data(), scales.data(), rows, heads, hs);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float amax_bound =
          t == DType::int8  ? scales[i / hs] * 0.5f * 1.0001f          // half a quantization step
          : t == DType::f16 ? std::fabs(x[i]) * (1.0f / 2048) + 1e-7f  // half an ulp of 11 bits
                            : 0.0f;
      INFO(dtype_name(t) << " element " << i << ": " << x[i] << " -> " << back[i]);
      REQUIRE(std::fabs(back[i] - x[i]) <= amax_bound);
    }
  }
  // An all-zero head gets scale 0 and loads back as zeros (no division by zero).
  std::vector<float> zeros(8, 0.0f), out(8, 1.0f), sc(2);
  std::vector<std::int8_t> q(8);
  kernels::kv_store_rows(DType::int8, q.data(), sc.data(), zeros.data(), 1, 2, 4);
  kernels::kv_load_rows(DType::int8, out.data(), q.data(), sc.data(), 1, 2, 4);
  CHECK(out == zeros);
}

TEST_CASE("attention_kv_cpu matches its reference for every storage type", "[unit][kv][kernel]") {
  const int S = 40, Nh = 8, Nkv = 2, hs = 16, KV = Nkv * hs, T = 3;
  const int pos[T] = {0, 17, 39};
  const auto k = random_vector(std::size_t(S) * KV, 2), v = random_vector(std::size_t(S) * KV, 3);
  const auto q = random_vector(std::size_t(T) * Nh * hs, 4);
  for (DType t : {DType::f32, DType::f16, DType::int8}) {
    const std::size_t bytes = std::size_t(S) * KV * kernels::kv_element_bytes(t);
    std::vector<std::uint8_t> kd(bytes), vd(bytes);
    std::vector<float> ks(std::size_t(S) * Nkv), vs(std::size_t(S) * Nkv);
    kernels::kv_store_rows(t, kd.data(), ks.data(), k.data(), S, Nkv, hs);
    kernels::kv_store_rows(t, vd.data(), vs.data(), v.data(), S, Nkv, hs);
    const KVRowsView kv_k{t, kd.data(), ks.data()}, kv_v{t, vd.data(), vs.data()};
    std::vector<float> out(q.size()), ref(q.size());
    kernels::attention_kv_ref(ref.data(), q.data(), kv_k, kv_v, pos, T, Nh, Nkv, hs);
    kernels::attention_kv_cpu(out.data(), q.data(), kv_k, kv_v, pos, T, Nh, Nkv, hs);
    const auto rep = test::all_close(out, ref, long(out.size()), 1e-5, 1e-4);
    INFO(dtype_name(t) << ": max abs error " << rep.max_abs_err);
    REQUIRE(rep.ok);
  }
}

TEST_CASE("attention_kv_cpu: tokens attended together have the bits of each token alone",
          "[unit][kv][kernel][attention]") {
  // Eight or more causal queries over a float cache first gather each KV head's rows into one
  // contiguous block (attend.hpp); fewer, other storage types and head sizes that are not a
  // multiple of 8 read the cache in place. Every token must get exactly the bits it gets alone:
  // the golden, naive = cached and batch-invariance properties of the forward pass rest on it.
  // Ascending runs (a prefill), scrambled and repeated positions, every storage type,
  // contiguous and paged rows (the gather follows the block table), and one size large enough
  // to run threaded.
  struct Case {
    int hs, S;
    std::vector<int> pos;
  };
  std::vector<int> run11(11), run41(41);
  for (int t = 0; t < 11; ++t) run11[t] = t;
  for (int t = 0; t < 41; ++t) run41[t] = 150 + t;
  const std::vector<Case> cases = {
      {8, 40, run11},
      {16, 40, {20, 21, 22, 23, 24, 25, 26}},
      {48, 40, {5, 3, 39, 0, 17, 17, 38, 2, 9}},
      {64, 40, run11},
      {64, 200, run41},
      {128, 40, {0, 1, 2, 3, 4, 5, 6, 7}},
      {12, 40, run11},  // no lane multiple: one query at a time
  };
  const int Nh = 4, Nkv = 2, block = 16;
  for (const Case& c : cases) {
    const int KV = Nkv * c.hs, T = int(c.pos.size());
    const auto k = random_vector(std::size_t(c.S) * KV, 30),
               v = random_vector(std::size_t(c.S) * KV, 31);
    const auto q = random_vector(std::size_t(T) * Nh * c.hs, 32);
    // A block table that reverses the physical blocks (the storage holds them all).
    const int blocks = (c.S + block - 1) / block;
    std::vector<int> table(blocks);
    for (int b = 0; b < blocks; ++b) table[b] = blocks - 1 - b;
    for (DType t : {DType::f32, DType::f16, DType::int8}) {
      for (bool paged : {false, true}) {
        INFO("hs " << c.hs << ", T " << T << ", " << dtype_name(t) << (paged ? ", paged" : ""));
        const int rows = blocks * block;
        const std::size_t bytes = std::size_t(rows) * KV * kernels::kv_element_bytes(t);
        std::vector<std::uint8_t> kd(bytes), vd(bytes);
        std::vector<float> ks(std::size_t(rows) * Nkv), vs(ks.size());
        // Position p goes to the row the view maps it to.
        KVRowsView kv_k{t, kd.data(), ks.data()}, kv_v{t, vd.data(), vs.data()};
        if (paged) kv_k.block_table = kv_v.block_table = table.data();
        kv_k.block_size = kv_v.block_size = block;
        const std::size_t elem = kernels::kv_element_bytes(t);
        for (int p = 0; p < c.S; ++p) {
          const std::size_t r = kv_k.row(p);
          kernels::kv_store_rows(t, kd.data() + r * KV * elem, ks.data() + r * Nkv,
                                 k.data() + std::size_t(p) * KV, 1, Nkv, c.hs);
          kernels::kv_store_rows(t, vd.data() + r * KV * elem, vs.data() + r * Nkv,
                                 v.data() + std::size_t(p) * KV, 1, Nkv, c.hs);
        }
        const std::size_t qd = std::size_t(Nh) * c.hs;
        std::vector<float> together(q.size()), alone(q.size()), ref(q.size());
        kernels::attention_kv_cpu(together.data(), q.data(), kv_k, kv_v, c.pos.data(), T, Nh, Nkv,
                                  c.hs);
        for (int i = 0; i < T; ++i)
          kernels::attention_kv_cpu(alone.data() + i * qd, q.data() + i * qd, kv_k, kv_v, &c.pos[i],
                                    1, Nh, Nkv, c.hs);
        CHECK(std::memcmp(together.data(), alone.data(), together.size() * sizeof(float)) == 0);
        kernels::attention_kv_ref(ref.data(), q.data(), kv_k, kv_v, c.pos.data(), T, Nh, Nkv, c.hs);
        const auto rep = test::all_close(together, ref, long(ref.size()), 1e-5, 1e-4);
        INFO("max abs error against the reference " << rep.max_abs_err);
        CHECK(rep.ok);
      }
    }
  }
}

TEST_CASE("KVCache allocates exactly the documented bytes", "[unit][kv]") {
  const ModelConfig c = named_config("stories260K");  // L=5, Nkv=4, hs=8: KV = 32
  CHECK(KVCache(c, 512, DType::f32).bytes_per_token() == 2u * 5 * 32 * 4);
  CHECK(KVCache(c, 512, DType::f16).bytes_per_token() == 2u * 5 * 32 * 2);
  CHECK(KVCache(c, 512, DType::int8).bytes_per_token() == 2u * 5 * 32 * 1 + 2u * 5 * 4 * 4);
  KVCache cache(c, 100, DType::f16);
  CHECK(cache.bytes() == 100u * 640);
  cache.set_length(10);
  CHECK(cache.bytes_in_use() == 6400u);
  REQUIRE_THROWS_WITH(KVCache(c, 513), Catch::Contains("outside [1, seq_len = 512]"));
  REQUIRE_THROWS_WITH(cache.set_length(101), Catch::Contains("outside [0, 100]"));
  REQUIRE_THROWS_WITH(parse_kv_dtype("bf8"), Catch::Contains("f32, f16 or int8"));
  const std::vector<float> row(32);
  REQUIRE_THROWS_AS(cache.store(0, 100, 1, row.data(), row.data()), Error);
}

TEST_CASE("the KV storage implements f32, f16 and int8 and refuses the other formats by name",
          "[unit][kv][dtype]") {
  CHECK(kv_storage_dtypes() == std::vector<DType>{DType::f32, DType::f16, DType::int8});
  for (DType t : all_dtypes()) {
    INFO(dtype_name(t));
    const bool implemented = t == DType::f32 || t == DType::f16 || t == DType::int8;
    CHECK(kv_storage_supported(t) == implemented);
    if (implemented) {
      CHECK(parse_kv_dtype(dtype_name(t)) == t);
      CHECK(kernels::kv_element_bytes(t) == std::size_t(dtype_bytes(t)));
    }
  }
  // --kv-dtype also takes the fp spellings.
  CHECK(parse_kv_dtype("fp32") == DType::f32);
  CHECK(parse_kv_dtype("fp16") == DType::f16);
  // A known format the storage lacks: every entry point says which ones it has.
  const ModelConfig c = named_config("stories260K");
  for (DType t : {DType::bf16, DType::fp8, DType::int4}) {
    INFO(dtype_name(t));
    REQUIRE_THROWS_WITH(parse_kv_dtype(dtype_name(t)),
                        Catch::Contains("not implemented (choose f32, f16 or int8)"));
    REQUIRE_THROWS_WITH(kernels::kv_element_bytes(t), Catch::Contains("f32, f16 or int8"));
    REQUIRE_THROWS_WITH(KVCache(c, 8, t), Catch::Contains("f32, f16 or int8"));
    REQUIRE_THROWS_WITH(kv_storage_bytes_per_token(c, t), Catch::Contains("f32, f16 or int8"));
    float x[8] = {}, out[8] = {}, scale = 0.0f;
    REQUIRE_THROWS_AS(kernels::kv_store_rows(t, out, &scale, x, 1, 1, 8), Error);
    REQUIRE_THROWS_AS(kernels::kv_load_rows(t, out, x, &scale, 1, 1, 8), Error);
    const KVRowsView k{t, x, nullptr, nullptr, 0};
    const int pos = 0;
    REQUIRE_THROWS_AS(kernels::attention_kv_cpu(out, x, k, k, &pos, 1, 1, 1, 8), Error);
    REQUIRE_THROWS_AS(kernels::attention_kv_ref(out, x, k, k, &pos, 1, 1, 1, 8), Error);
  }
}

TEST_CASE("the cached loop gives the naive loop's tokens and bit-identical logits",
          "[invariant][kv][generate]") {
  const test::ModelCases mc = test::model_cases();
  const Model& model = mc.model;
  const Tokenizer& tok = mc.tokenizer;
  for (const auto& c : mc.cases) {
    GenerateOptions o;
    o.prompt = c.prompt;
    o.steps = c.steps;
    o.sampling.temperature = 0.0f;
    o.keep_logits = true;
    o.loop = LoopKind::cached;
    const GenerationResult cached = generate(model, tok, o);
    INFO("case " << c.name);
    // llama2.c's tokens when the golden file is here (else the cases came from this loop).
    REQUIRE(cached.tokens == c.tokens);
    CHECK(cached.text == c.text);
    CHECK(cached.kv_bytes_in_use == cached.kv_bytes_per_token * (cached.tokens.size() - 1));
    for (std::size_t i = 1; i < cached.steps.size(); ++i)
      CHECK(cached.steps[i].tokens_forwarded == 1);
    // The naive loop on a shorter budget: its logits must be the same bits at every position
    // (every kernel's reduction order is independent of how many tokens a call processes).
    o.loop = LoopKind::naive;
    o.steps = std::min(o.steps, int(cached.prompt_tokens.size()) + 24);
    const GenerationResult naive = generate(model, tok, o);
    for (std::size_t pos = 0; pos < naive.logits.size(); ++pos) {
      INFO("position " << pos);
      REQUIRE(std::memcmp(naive.logits[pos].data(), cached.logits[pos].data(), 512 * 4) == 0);
    }
  }
}

TEST_CASE("f16 and int8 KV storage: bounded logit error, few greedy tokens changed",
          "[invariant][kv]") {
  const test::ModelCases mc = test::model_cases();
  const Model& model = mc.model;
  for (DType t : {DType::f16, DType::int8}) {
    double max_diff = 0.0, sum_diff = 0.0;
    long n_logits = 0, argmax_changed = 0, positions = 0;
    for (const auto& c : mc.cases) {
      // Teacher-forced: feed the greedy tokens so every position compares like with like.
      const std::vector<int>& tokens = c.tokens;
      ForwardPass pass(model);
      KVCache ref_cache(model.config(), 0, DType::f32), q_cache(model.config(), 0, t);
      std::vector<float> ref, got;
      const std::span<const int> fed(tokens.data(), tokens.size() - 1);
      pass.forward(fed, 0, ref_cache, LogitsMode::all, ref);
      pass.forward(fed, 0, q_cache, LogitsMode::all, got);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        max_diff = std::max(max_diff, double(std::fabs(ref[i] - got[i])));
        sum_diff += std::fabs(ref[i] - got[i]);
      }
      n_logits += long(ref.size());
      for (std::size_t row = 0; row < ref.size() / 512; ++row, ++positions) {
        const auto a = ref.begin() + long(row) * 512, b = got.begin() + long(row) * 512;
        argmax_changed += (std::max_element(a, a + 512) - a) != (std::max_element(b, b + 512) - b);
      }
    }
    std::printf("%s: max |logit diff| %.4f, mean %.5f, argmax changed at %ld of %ld positions\n",
                dtype_name(t), max_diff, sum_diff / n_logits, argmax_changed, positions);
    INFO(dtype_name(t) << ": max |logit diff| " << max_diff);
    // Measured on stories260K (1,126 teacher-forced positions): f16 max 0.034, mean 0.002, no
    // argmax changed; int8 max 1.57, mean 0.09, 19 argmaxes changed (1.7%: with hs = 8 one
    // outlier sets the whole head's scale). The bounds keep a margin of about 2x; the non-zero
    // error proves the storage is not silently f32. On the synthetic stand-in (logits of order
    // one) the errors are far smaller: f16 max 0.0006, int8 max 0.013, 2 argmaxes changed.
    CHECK(max_diff > 0.0);
    if (t == DType::f16) {
      CHECK(max_diff < 0.1);
      CHECK(sum_diff / n_logits < 0.01);
      CHECK(argmax_changed <= 2);
    } else {
      CHECK(max_diff < 3.0);
      CHECK(sum_diff / n_logits < 0.2);
      CHECK(argmax_changed < positions / 25);
    }
  }
}

TEST_CASE("the KV calculator predicts exactly the bytes the cache allocates",
          "[unit][kv][kv_calc]") {
  for (const char* name : {"stories260K", "stories15M", "llama3-8b"}) {
    ModelConfig c = named_config(name);
    c.seq_len = std::min(c.seq_len, 64);  // keep the allocation small
    INFO(name);
    CHECK(kv_bytes_per_token(c, DType::f32) == double(KVCache(c, 8, DType::f32).bytes_per_token()));
    CHECK(kv_bytes_per_token(c, DType::f16) == double(KVCache(c, 8, DType::f16).bytes_per_token()));
    // int8 carries one float scale per (token, head) for keys and for values.
    CHECK(kv_bytes_per_token(c, DType::int8, sizeof(float)) ==
          double(KVCache(c, 8, DType::int8).bytes_per_token()));
    CHECK(kv_bytes(c, DType::f16, 8) == double(KVCache(c, 8, DType::f16).bytes()));
  }
}
