// Exercise 05's test: the head mapping, the 8x saving of Llama-3-70B's cache, that the cache
// stores and returns the right vectors, and that attention over the GQA cache equals attention
// over a multi-head cache in which each KV head is repeated for its group (bit for bit: it is the
// same arithmetic on the same numbers, only stored once).

#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/kernels/attention.hpp"

namespace ex = inferlab::ex05;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Small integers / 8: exactly representable, so sums are exact whatever the order.
float value_at(std::size_t i, unsigned salt) {
  return float(int((i * 7919u + salt * 104729u) % 17u) - 8) / 8.0f;
}
}  // namespace

TEST_CASE("query heads map to KV heads in consecutive groups", "[exercise][ex05]") {
  for (int h = 0; h < 8; ++h) CHECK(ex::kv_head_for(h, 64, 8) == 0);
  CHECK(ex::kv_head_for(8, 64, 8) == 1);
  CHECK(ex::kv_head_for(15, 64, 8) == 1);
  CHECK(ex::kv_head_for(63, 64, 8) == 7);
  CHECK(ex::kv_head_for(5, 32, 32) == 5);  // multi-head attention: one KV head per query head
  CHECK(ex::kv_head_for(7, 8, 1) == 0);    // multi-query attention: one KV head for all
}

TEST_CASE("Llama-3-70B: 64 query heads on 8 KV heads, an 8x smaller cache", "[exercise][ex05]") {
  CHECK(ex::gqa_saving(64, 8) == 8.0);
  CHECK(ex::gqa_saving(32, 8) == 4.0);  // Llama-3-8B
  CHECK(ex::gqa_saving(32, 32) == 1.0);
  // BF16, 4K tokens: 10 GiB if all 64 heads were stored, 1.25 GiB with the 8 KV heads.
  const double mha = ex::cache_bytes(80, 64, 128, 4096, 2.0);
  const double gqa = ex::cache_bytes(80, 8, 128, 4096, 2.0);
  CHECK(mha == 10.0 * kGiB);
  CHECK(gqa == 1.25 * kGiB);
  CHECK(mha / gqa == ex::gqa_saving(64, 8));
}

TEST_CASE("the cache allocates Nkv heads and returns what was written", "[exercise][ex05]") {
  const int layers = 2, n_heads = 8, n_kv = 2, hd = 16, S = 10;
  ex::GqaCache cache(layers, n_heads, n_kv, hd, S);
  CHECK(cache.stored_heads() == n_kv);
  CHECK(double(cache.bytes()) == ex::cache_bytes(layers, n_kv, hd, S, 4.0));
  // The same shape stored multi-head would be 4x (g = 4) as large.
  CHECK(double(cache.bytes()) * ex::gqa_saving(n_heads, n_kv) ==
        ex::cache_bytes(layers, n_heads, hd, S, 4.0));

  std::vector<float> k(n_kv * hd), v(n_kv * hd);
  for (int l = 0; l < layers; ++l)
    for (int p = 0; p < S; ++p) {
      for (std::size_t i = 0; i < k.size(); ++i) {
        k[i] = value_at(i + 1000 * p + 100000 * l, 1);
        v[i] = value_at(i + 1000 * p + 100000 * l, 2);
      }
      cache.write(l, p, k.data(), v.data());
    }
  for (int l = 0; l < layers; ++l)
    for (int p = 0; p < S; ++p)
      for (int h = 0; h < n_heads; ++h) {
        const int kvh = h / (n_heads / n_kv);
        for (int i = 0; i < hd; ++i) {
          const std::size_t at = std::size_t(kvh) * hd + i + 1000 * p + 100000 * l;
          REQUIRE(cache.key(l, p, h)[i] == value_at(at, 1));
          REQUIRE(cache.value(l, p, h)[i] == value_at(at, 2));
        }
      }
}

TEST_CASE("attention over the GQA cache equals attention over the repeated multi-head cache",
          "[exercise][ex05]") {
  const int n_heads = 8, n_kv = 2, hd = 16, S = 12, g = n_heads / n_kv;
  ex::GqaCache cache(1, n_heads, n_kv, hd, S);
  // The multi-head reference: every KV head copied for each query head of its group.
  std::vector<float> k_mha(std::size_t(S) * n_heads * hd), v_mha(k_mha.size());
  std::vector<float> k(n_kv * hd), v(n_kv * hd);
  for (int p = 0; p < S; ++p) {
    for (std::size_t i = 0; i < k.size(); ++i) {
      k[i] = value_at(i + 1000 * p, 3);
      v[i] = value_at(i + 1000 * p, 4);
    }
    cache.write(0, p, k.data(), v.data());
    for (int h = 0; h < n_heads; ++h)
      for (int i = 0; i < hd; ++i) {
        k_mha[(std::size_t(p) * n_heads + h) * hd + i] = k[std::size_t(h / g) * hd + i];
        v_mha[(std::size_t(p) * n_heads + h) * hd + i] = v[std::size_t(h / g) * hd + i];
      }
  }
  std::vector<float> q(n_heads * hd), out_gqa(q.size()), out_mha(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = value_at(i, 5);
  const int pos = S - 1;
  inferlab::kernels::attention_ref(out_gqa.data(), q.data(), cache.layer_keys(0),
                                   cache.layer_values(0), &pos, 1, n_heads, n_kv, hd);
  inferlab::kernels::attention_ref(out_mha.data(), q.data(), k_mha.data(), v_mha.data(), &pos, 1,
                                   n_heads, n_heads, hd);
  for (std::size_t i = 0; i < q.size(); ++i) REQUIRE(out_gqa[i] == out_mha[i]);
}
