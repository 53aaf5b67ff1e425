// Exercise 12's test: a decode step worked by hand, scores large enough to overflow a naive
// softmax, and agreement with the core on random shapes and seeds: the rows your append stores
// equal the rows inferlab::KVCache stores, bit for bit, and your attention equals the core's
// reference attention (inferlab::kernels::attention_kv_ref) over its cache within
// |yours - core| <= 1e-5 + 1e-4 |core| per float.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/runtime/kv_cache.hpp"

namespace ex = inferlab::ex12;

namespace {

constexpr double kAtol = 1e-5;  // summation order and 1/sqrt(hs) vs a division: a few ulps
constexpr double kRtol = 1e-4;

// "" when every |got - want| <= kAtol + kRtol |want|; otherwise the largest error and the first
// mismatch, so a failure says where to look.
std::string compare(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return "size " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  }
  double max_err = 0.0;
  std::ptrdiff_t first = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    // A NaN compares false everywhere: count it as a mismatch explicitly.
    const bool bad = !(err <= kAtol + kRtol * std::fabs(double(want[i])));
    if (bad && first < 0) first = std::ptrdiff_t(i);
    if (!(err <= max_err)) max_err = err;
  }
  if (first < 0) return "";
  std::ostringstream s;
  s << "max |error| " << max_err << "; first mismatch at float " << first << ": got "
    << got[std::size_t(first)] << ", expected " << want[std::size_t(first)];
  return s.str();
}

std::vector<float> uniform(std::mt19937& rng, std::size_t n, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> x(n);
  for (float& f : x) f = u(rng);
  return x;
}

// The core's model of one layer: a configuration with the same heads and one layer.
inferlab::ModelConfig one_layer(int n_heads, int n_kv_heads, int head_size, int capacity) {
  inferlab::ModelConfig c;
  c.dim = n_heads * head_size;
  c.hidden_dim = 1;
  c.n_layers = 1;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.vocab_size = 1;
  c.seq_len = capacity;
  return c;
}

}  // namespace

TEST_CASE("exercise 12: a decode step worked by hand", "[exercise][ex12]") {
  // 2 query heads share 1 KV head of 2 floats; two cached positions.
  ex::LayerCache c = ex::make_layer_cache(4, 1, 2);
  REQUIRE(c.capacity == 4);
  REQUIRE(c.length == 0);
  REQUIRE(c.keys.size() == 8);
  REQUIRE(c.values.size() == 8);
  ex::append(c, std::vector<float>{1, 0}, std::vector<float>{1, 2});
  ex::append(c, std::vector<float>{0, 1}, std::vector<float>{3, 4});
  REQUIRE(c.length == 2);
  CHECK(std::vector<float>(c.keys.begin(), c.keys.begin() + 4) == std::vector<float>{1, 0, 0, 1});
  CHECK(std::vector<float>(c.values.begin(), c.values.begin() + 4) ==
        std::vector<float>{1, 2, 3, 4});
  // Head 0: scores (sqrt(2) ln 3 . k) / sqrt(2) = ln 3 and 0, so weights 3/4 and 1/4 and the
  // output 3/4 (1, 2) + 1/4 (3, 4) = (1.5, 2.5). Head 1 (q = 0): equal weights, (2, 3). Both
  // heads read the one KV head.
  const float a = float(std::sqrt(2.0) * std::log(3.0));
  const std::vector<float> out = ex::attend(c, std::vector<float>{a, 0, 0, 0}, 2);
  CHECK(compare(out, {1.5f, 2.5f, 2.0f, 3.0f}) == "");
}

TEST_CASE("exercise 12: scores far beyond float's exp range stay finite", "[exercise][ex12]") {
  // hs = 4, so the scale 1/sqrt(hs) = 0.5 is exact and the scores are exact integers.
  ex::LayerCache c = ex::make_layer_cache(2, 1, 4);
  ex::append(c, std::vector<float>{1, 0, 0, 0}, std::vector<float>{1, 0, 0, 0});
  ex::append(c, std::vector<float>{0, 1, 0, 0}, std::vector<float>{0, 1, 0, 0});
  // Head 0 scores 1000 and 999: exp(1000) overflows float, the softmax does not (weights
  // 1 / (1 + e^-1) and e^-1 / (1 + e^-1)). Head 1 scores -1000 twice: exp(-1000) underflows to
  // 0, and 0 / 0 is not the answer 1/2.
  const std::vector<float> out =
      ex::attend(c, std::vector<float>{2000, 1998, 0, 0, -2000, -2000, 0, 0}, 2);
  const float w = float(1.0 / (1.0 + std::exp(-1.0)));
  CHECK(compare(out, {w, 1 - w, 0, 0, 0.5f, 0.5f, 0, 0}) == "");
}

TEST_CASE("exercise 12: bad calls are refused, and leave the cache as it was", "[exercise][ex12]") {
  CHECK_THROWS_AS(ex::make_layer_cache(0, 1, 4), inferlab::Error);
  CHECK_THROWS_AS(ex::make_layer_cache(4, 0, 4), inferlab::Error);
  CHECK_THROWS_AS(ex::make_layer_cache(4, 1, 0), inferlab::Error);
  ex::LayerCache c = ex::make_layer_cache(1, 2, 2);
  REQUIRE(c.keys.size() == 4);
  CHECK_THROWS_AS(ex::attend(c, std::vector<float>(4, 1.0f), 2), inferlab::Error);  // empty
  CHECK_THROWS_AS(ex::append(c, std::vector<float>(3), std::vector<float>(4)), inferlab::Error);
  CHECK_THROWS_AS(ex::append(c, std::vector<float>(4), std::vector<float>(5)), inferlab::Error);
  CHECK(c.length == 0);
  ex::append(c, std::vector<float>{1, 2, 3, 4}, std::vector<float>{5, 6, 7, 8});
  REQUIRE(c.length == 1);
  const ex::LayerCache full = c;
  CHECK_THROWS_AS(ex::append(c, std::vector<float>(4, 9.0f), std::vector<float>(4, 9.0f)),
                  inferlab::Error);
  CHECK(c.length == 1);
  CHECK(c.keys == full.keys);
  CHECK(c.values == full.values);
  CHECK_THROWS_AS(ex::attend(c, std::vector<float>(6, 1.0f), 3), inferlab::Error);  // 3 % 2
  CHECK_THROWS_AS(ex::attend(c, std::vector<float>(6, 1.0f), 2), inferlab::Error);  // q size
  CHECK_NOTHROW(ex::attend(c, std::vector<float>(8, 1.0f), 4));
}

TEST_CASE("exercise 12: decode steps agree with the core's KV cache and attention",
          "[exercise][ex12]") {
  // Random shapes: multi-head (g = 1), grouped-query and multi-query (Nkv = 1) attention, odd
  // head sizes, and every length from 1 to the capacity (one decode step per length).
  const int kv_heads[] = {1, 2, 3, 4};
  const int groups[] = {1, 2, 4, 8};
  const int head_sizes[] = {1, 3, 8, 16, 64};
  int cases = 0, steps = 0, gqa_cases = 0;
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const int n_kv = kv_heads[rng() % 4];
    const int group = groups[rng() % 4];
    const int hs = head_sizes[rng() % 5];
    const int capacity = 1 + int(rng() % 40);
    const int n_heads = n_kv * group;
    const float q_scale = (rng() % 2) ? 1.0f : 4.0f;  // flat and peaked softmaxes
    INFO("seed " << seed << ": Nh " << n_heads << ", Nkv " << n_kv << ", hs " << hs << ", capacity "
                 << capacity);
    const std::size_t row = std::size_t(n_kv) * hs;

    ex::LayerCache mine = ex::make_layer_cache(capacity, n_kv, hs);
    REQUIRE(mine.keys.size() == std::size_t(capacity) * row);
    REQUIRE(mine.values.size() == std::size_t(capacity) * row);
    inferlab::KVCache core(one_layer(n_heads, n_kv, hs, capacity));

    for (int pos = 0; pos < capacity; ++pos) {
      INFO("decode step at position " << pos);
      const std::vector<float> k = uniform(rng, row, 1.0f);
      const std::vector<float> v = uniform(rng, row, 1.0f);
      const std::vector<float> q = uniform(rng, std::size_t(n_heads) * hs, q_scale);

      // The append: the row you store is the row the core stores.
      ex::append(mine, k, v);
      core.store(0, pos, 1, k.data(), v.data());
      core.set_length(pos + 1);
      REQUIRE(mine.length == pos + 1);
      const auto* core_k = static_cast<const float*>(core.keys(0).data) + core.row(pos) * row;
      const auto* core_v = static_cast<const float*>(core.values(0).data) + core.row(pos) * row;
      REQUIRE(std::memcmp(&mine.keys[std::size_t(pos) * row], core_k, row * sizeof(float)) == 0);
      REQUIRE(std::memcmp(&mine.values[std::size_t(pos) * row], core_v, row * sizeof(float)) == 0);

      // The read: the query at position pos attends to positions 0..pos.
      std::vector<float> want(q.size());
      inferlab::kernels::attention_kv_ref(want.data(), q.data(), core.keys(0), core.values(0), &pos,
                                          1, n_heads, n_kv, hs);
      const std::string diff = compare(ex::attend(mine, q, n_heads), want);
      if (!diff.empty()) FAIL("attention differs from the core's: " << diff);
      ++steps;
    }
    ++cases;
    if (group > 1 && n_kv > 1) ++gqa_cases;
  }
  CHECK(cases == 40);
  CHECK(steps > 400);
  CHECK(gqa_cases >= 5);  // enough shapes where h % Nkv and h / g name different KV heads
}
