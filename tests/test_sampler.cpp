#include "test_support.hpp"

// Tests of the sampler (common/include/inferlab/runtime/sampler.hpp). Three kinds:
//   * exact: each step alone on hand-built probabilities or logits, with the expected output
//     worked out by hand (the boundaries: the token that crosses top-p, p == min_p * p_max, ties);
//   * worked numbers from the chapter text (min-p thresholds, the reference sampler's example);
//   * statistical: 200,000 draws compared with distribution() by a chi-square test.
// Reference values marked "computed in double" were computed independently (Python, float64)
// from the definitions, not from this implementation.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/sampler.hpp"

using inferlab::Error;
using inferlab::Sampler;
using inferlab::SamplingParams;

namespace {

/// Indices of the nonzero entries: what a filter kept.
std::vector<int> kept(const std::vector<float>& probs) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] != 0.0f) ids.push_back(static_cast<int>(i));
  }
  return ids;
}

/// The distribution used by several exact tests: already sorted, sums to 1.
std::vector<float> five_probs() { return {0.5f, 0.2f, 0.15f, 0.1f, 0.05f}; }

/// Upper quantile of the chi-square distribution with @p df degrees of freedom, by the
/// Wilson–Hilferty approximation: (X / df)^(1/3) is nearly normal with mean 1 - 2/(9 df) and
/// variance 2/(9 df), so X_q ~ df * (1 - 2/(9 df) + z_q * sqrt(2/(9 df)))^3. For df = 4 and
/// q = 0.999 it gives 18.7 against the exact 18.47 — slightly conservative, plenty for a test.
double chi_square_critical(int df, double z_q) {
  const double a = 2.0 / (9.0 * df);
  const double c = 1.0 - a + z_q * std::sqrt(a);
  return df * c * c * c;
}
constexpr double kZ999 = 3.090232306167813;  // standard normal quantile at 0.999

}  // namespace

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

TEST_CASE("SamplingParams::validate names every invalid parameter", "[unit][sampler]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto invalid = [](auto mutate, const char* name) {
    SamplingParams p;
    mutate(p);
    INFO("parameter " << name);
    REQUIRE_THROWS_AS(p.validate(), Error);
    REQUIRE_THROWS_WITH(p.validate(), Catch::Contains(name));
    // The constructor validates too, so a bad Sampler can never exist.
    REQUIRE_THROWS_WITH(Sampler(p, 8), Catch::Contains(name));
  };
  invalid([](SamplingParams& p) { p.temperature = -0.1f; }, "temperature");
  invalid([&](SamplingParams& p) { p.temperature = nan; }, "temperature");
  invalid([&](SamplingParams& p) { p.temperature = inf; }, "temperature");
  invalid([](SamplingParams& p) { p.top_k = -1; }, "top_k");
  invalid([](SamplingParams& p) { p.top_p = 0.0f; }, "top_p");
  invalid([](SamplingParams& p) { p.top_p = 1.01f; }, "top_p");
  invalid([&](SamplingParams& p) { p.top_p = nan; }, "top_p");
  invalid([](SamplingParams& p) { p.min_p = -0.01f; }, "min_p");
  invalid([](SamplingParams& p) { p.min_p = 1.5f; }, "min_p");
  invalid([&](SamplingParams& p) { p.min_p = nan; }, "min_p");
  invalid([](SamplingParams& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty");
  invalid([](SamplingParams& p) { p.repetition_penalty = -1.2f; }, "repetition_penalty");
  invalid([&](SamplingParams& p) { p.repetition_penalty = inf; }, "repetition_penalty");
  invalid([&](SamplingParams& p) { p.frequency_penalty = nan; }, "frequency_penalty");
  invalid([&](SamplingParams& p) { p.frequency_penalty = -inf; }, "frequency_penalty");
  invalid([&](SamplingParams& p) { p.presence_penalty = inf; }, "presence_penalty");

  SECTION("the messages state the allowed range") {
    SamplingParams p;
    p.top_p = 2.0f;
    REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("(0, 1]"));
  }
  SECTION("the edges of every range are valid") {
    SamplingParams p;
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 1.0f;
    p.repetition_penalty = 0.5f;  // < 1 rewards repetition: odd, but allowed
    p.frequency_penalty = -2.0f;  // negative penalties are allowed too (OpenAI: [-2, 2])
    REQUIRE_NOTHROW(p.validate());
    p.min_p = 0.0f;
    REQUIRE_NOTHROW(p.validate());
  }
}

TEST_CASE("Sampler checks vocabulary size, logits and history", "[unit][sampler]") {
  REQUIRE_THROWS_WITH(Sampler(SamplingParams{}, 0), Catch::Contains("vocab_size"));
  Sampler sampler(SamplingParams{}, 4);
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> short_logits = {1.0f, 2.0f, 3.0f};
  const std::vector<int> none;
  REQUIRE_THROWS_AS(sampler.sample(short_logits, none), Error);
  REQUIRE_THROWS_AS(sampler.distribution(short_logits, none), Error);
  REQUIRE_THROWS_AS(sampler.sample(logits, std::vector<int>{0, 4}), Error);
  REQUIRE_THROWS_AS(sampler.sample(logits, std::vector<int>{-1}), Error);
  const std::vector<float> with_nan = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f};
  REQUIRE_THROWS_WITH(sampler.sample(with_nan, none), Catch::Contains("NaN"));
  REQUIRE_NOTHROW(sampler.sample(logits, std::vector<int>{0, 3}));
}

// ---------------------------------------------------------------------------------------------
// RNG
// ---------------------------------------------------------------------------------------------

TEST_CASE("Rng is xorshift64* with fixed reference outputs", "[unit][sampler]") {
  // Computed in Python with 64-bit masks from the recurrence in the header; pins the generator
  // so draws stay identical across platforms and refactorings.
  inferlab::Rng rng(1);
  const std::array<std::uint32_t, 4> expected = {1206177355u, 2882512552u, 3117485455u,
                                                 1303648416u};
  for (std::uint32_t e : expected) REQUIRE(rng.next_u32() == e);

  SECTION("seed 0 is replaced by a nonzero constant instead of producing zeros forever") {
    inferlab::Rng zero(0);
    REQUIRE(zero.next_u32() == 226735074u);
    REQUIRE(zero.next_u32() == 1422150777u);
  }
  SECTION("next_f32 is the top 24 bits over 2^24, inside [0, 1)") {
    inferlab::Rng a(1);
    REQUIRE(a.next_f32() == static_cast<float>(1206177355u >> 8) / 16777216.0f);
    inferlab::Rng b(12345);
    double sum = 0.0;
    for (int i = 0; i < 10000; ++i) {
      const float u = b.next_f32();
      REQUIRE(u >= 0.0f);
      REQUIRE(u < 1.0f);
      sum += u;
    }
    // Mean of 10,000 uniforms: standard deviation 0.0029, so 0.02 is ~7 sigma.
    REQUIRE(std::fabs(sum / 10000.0 - 0.5) < 0.02);
  }
}

TEST_CASE("the same seed gives the same tokens, another seed other tokens", "[unit][sampler]") {
  std::vector<float> logits(16, 0.0f);  // uniform over 16 tokens: 16^-200 chance of a false pass
  auto draw = [&](std::uint64_t seed) {
    SamplingParams p;
    p.seed = seed;
    Sampler sampler(p, 16);
    std::vector<int> tokens;
    for (int i = 0; i < 200; ++i) tokens.push_back(sampler.sample(logits, {}));
    return tokens;
  };
  REQUIRE(draw(7) == draw(7));
  REQUIRE(draw(7) != draw(8));
}

// ---------------------------------------------------------------------------------------------
// Penalties
// ---------------------------------------------------------------------------------------------

TEST_CASE("repetition penalty divides positive logits and multiplies negative ones",
          "[unit][sampler]") {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  std::vector<float> logits = {2.0f, -2.0f, 0.0f, 1.0f};
  // Token 0 appears twice but is penalised once (the CTRL rule is over distinct tokens); 3 is
  // not in the history; 0.0 has no sign, so it stays.
  const std::vector<int> history = {0, 1, 2, 0};
  inferlab::apply_penalties(logits, history, p);
  REQUIRE(logits == std::vector<float>{1.0f, -4.0f, 0.0f, 1.0f});

  SECTION("an empty history changes nothing") {
    std::vector<float> z = {2.0f, -2.0f};
    inferlab::apply_penalties(z, {}, p);
    REQUIRE(z == std::vector<float>{2.0f, -2.0f});
  }
  SECTION("an id outside the vocabulary is an error") {
    std::vector<float> z = {2.0f, -2.0f};
    REQUIRE_THROWS_AS(inferlab::apply_penalties(z, std::vector<int>{2}, p), Error);
  }
}

TEST_CASE("frequency penalty scales with the count, presence penalty does not", "[unit][sampler]") {
  SamplingParams p;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  inferlab::apply_penalties(logits, std::vector<int>{0, 0, 0, 1}, p);
  // token 0: 1 - 3 * 0.5 - 0.25; token 1: 1 - 1 * 0.5 - 0.25; token 2 unseen.
  REQUIRE(logits == std::vector<float>{-0.75f, 0.25f, 1.0f});
}

TEST_CASE("repetition penalty is applied before the frequency penalty", "[unit][sampler]") {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 1.0f;
  std::vector<float> logits = {3.0f, 0.0f};
  inferlab::apply_penalties(logits, std::vector<int>{0, 0}, p);
  // 3 / 2 - 2 * 1 = -0.5. The other order would give (3 - 2) / 2 = 0.5.
  REQUIRE(logits[0] == -0.5f);
  REQUIRE(logits[1] == 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Greedy and temperature
// ---------------------------------------------------------------------------------------------

TEST_CASE("greedy is the argmax of the penalised logits, lowest id on a tie", "[unit][sampler]") {
  REQUIRE(inferlab::argmax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}) == 1);
  REQUIRE(inferlab::argmax(std::vector<float>{-5.0f}) == 0);

  SamplingParams p;
  p.temperature = 0.0f;
  Sampler plain(p, 5);
  const std::vector<float> logits = {3.0f, 2.5f, 1.0f, 0.5f, -1.0f};
  REQUIRE(plain.sample(logits, {}) == 0);
  REQUIRE(plain.distribution(logits, {}) == std::vector<float>{1, 0, 0, 0, 0});

  // With token 0 in the history and r = 1.3, its logit becomes 3 / 1.3 = 2.31 < 2.5.
  p.repetition_penalty = 1.3f;
  Sampler penalised(p, 5);
  REQUIRE(penalised.sample(logits, std::vector<int>{0}) == 1);
  REQUIRE(penalised.distribution(logits, std::vector<int>{0}) == std::vector<float>{0, 1, 0, 0, 0});
}

TEST_CASE("softmax_with_temperature sharpens below 1 and flattens above", "[unit][sampler]") {
  const float ln2 = std::log(2.0f);
  auto softmax = [](std::vector<float> z, float t) {
    inferlab::softmax_with_temperature(z, t);
    return z;
  };
  // Logits 0, ln 2, ln 4: T = 1 gives weights 1:2:4, T = 0.5 squares them (1:4:16), T = 2 takes
  // their square roots (1 : sqrt 2 : 2).
  const std::vector<float> z = {0.0f, ln2, 2.0f * ln2};
  const double r2 = std::sqrt(2.0);
  const std::vector<std::vector<double>> expected = {
      {1.0 / 7, 2.0 / 7, 4.0 / 7},
      {1.0 / 21, 4.0 / 21, 16.0 / 21},
      {1.0 / (3 + r2), r2 / (3 + r2), 2.0 / (3 + r2)}};
  const std::array<float, 3> temps = {1.0f, 0.5f, 2.0f};
  for (std::size_t i = 0; i < temps.size(); ++i) {
    const auto r = inferlab::test::all_close(softmax(z, temps[i]), expected[i], 3, 1e-6, 1e-5);
    INFO("T = " << temps[i] << " max err " << r.max_abs_err << " first bad " << r.first_bad);
    REQUIRE(r.ok);
  }
  SECTION("huge logits do not overflow (the max is subtracted first)") {
    const auto p = softmax({1000.0f, 999.0f}, 1.0f);
    const double e = 1.0 / (1.0 + std::exp(-1.0));
    REQUIRE(p[0] == Approx(e).epsilon(1e-6));
    REQUIRE(p[1] == Approx(1.0 - e).epsilon(1e-5));
  }
  SECTION("a masked token (-inf) gets exactly 0; all masked is an error") {
    const float ninf = -std::numeric_limits<float>::infinity();
    const auto p = softmax({0.0f, ninf, 0.0f}, 0.7f);
    REQUIRE(p == std::vector<float>{0.5f, 0.0f, 0.5f});
    REQUIRE_THROWS_AS(softmax({ninf, ninf}, 1.0f), Error);
  }
}

// ---------------------------------------------------------------------------------------------
// Filters, each alone (on probabilities {0.5, 0.2, 0.15, 0.1, 0.05})
// ---------------------------------------------------------------------------------------------

TEST_CASE("top-k keeps the k most probable, lower id first on a tie", "[unit][sampler]") {
  auto top_k = [](std::vector<float> p, int k) {
    inferlab::top_k_filter(p, k);
    return p;
  };
  REQUIRE(top_k(five_probs(), 2) == std::vector<float>{0.5f, 0.2f, 0, 0, 0});
  REQUIRE(top_k(five_probs(), 1) == std::vector<float>{0.5f, 0, 0, 0, 0});
  REQUIRE(top_k(five_probs(), 0) == five_probs());  // off
  REQUIRE(top_k(five_probs(), 5) == five_probs());
  REQUIRE(top_k(five_probs(), 9) == five_probs());
  // Unsorted input: the two largest are ids 1 and 3.
  REQUIRE(kept(top_k({0.1f, 0.5f, 0.05f, 0.2f, 0.15f}, 2)) == std::vector<int>{1, 3});
  // Ties: exactly k survive, the lower ids.
  REQUIRE(kept(top_k({0.1f, 0.3f, 0.3f, 0.3f}, 2)) == std::vector<int>{1, 2});
  REQUIRE(kept(top_k({0.25f, 0.25f, 0.25f, 0.25f}, 3)) == std::vector<int>{0, 1, 2});
}

TEST_CASE("min-p drops tokens below min_p * p_max", "[unit][sampler]") {
  auto min_p = [](std::vector<float> p, float m) {
    inferlab::min_p_filter(p, m);
    return p;
  };
  // p_max = 0.5: min_p 0.3 gives threshold 0.15, and p = 0.15 itself is kept (>=).
  REQUIRE(min_p(five_probs(), 0.3f) == std::vector<float>{0.5f, 0.2f, 0.15f, 0, 0});
  REQUIRE(kept(min_p(five_probs(), 0.31f)) == std::vector<int>{0, 1});          // threshold 0.155
  REQUIRE(kept(min_p(five_probs(), 0.1f)) == std::vector<int>{0, 1, 2, 3, 4});  // 0.05 == 0.05
  REQUIRE(kept(min_p(five_probs(), 0.11f)) == std::vector<int>{0, 1, 2, 3});
  REQUIRE(kept(min_p(five_probs(), 1.0f)) == std::vector<int>{0});  // only the maximum
  REQUIRE(min_p(five_probs(), 0.0f) == five_probs());               // off
  // Scale-free: unnormalised input behaves the same (threshold relative to the max).
  REQUIRE(kept(min_p({5.0f, 2.0f, 1.5f, 1.0f, 0.5f}, 0.3f)) == std::vector<int>{0, 1, 2});
}

TEST_CASE("top-p keeps the smallest prefix whose mass reaches top_p", "[unit][sampler]") {
  auto top_p = [](std::vector<float> p, float t) {
    inferlab::top_p_filter(p, t);
    return p;
  };
  // Cumulative masses 0.5, 0.7, 0.85, 0.95, 1.0.
  REQUIRE(top_p(five_probs(), 0.7f) == std::vector<float>{0.5f, 0.2f, 0, 0, 0});  // 0.7 reached
  REQUIRE(top_p(five_probs(), 0.71f) == std::vector<float>{0.5f, 0.2f, 0.15f, 0, 0});
  REQUIRE(kept(top_p(five_probs(), 0.5f)) == std::vector<int>{0});
  REQUIRE(kept(top_p(five_probs(), 0.4f)) == std::vector<int>{0});  // the crossing token
  REQUIRE(kept(top_p(five_probs(), 0.51f)) == std::vector<int>{0, 1});
  REQUIRE(kept(top_p(five_probs(), 0.96f)) == std::vector<int>{0, 1, 2, 3, 4});
  REQUIRE(top_p(five_probs(), 1.0f) == five_probs());  // off
  // Unsorted input: the order is by probability, not by id.
  REQUIRE(kept(top_p({0.1f, 0.5f, 0.05f, 0.2f, 0.15f}, 0.71f)) == std::vector<int>{1, 3, 4});
  // Unnormalised input (twice the mass): the threshold is relative to the total.
  REQUIRE(kept(top_p({1.0f, 0.4f, 0.3f, 0.2f, 0.1f}, 0.7f)) == std::vector<int>{0, 1});
  // Ties: lower ids first.
  REQUIRE(kept(top_p({0.25f, 0.25f, 0.25f, 0.25f}, 0.5f)) == std::vector<int>{0, 1});
}

TEST_CASE("top-p after top-k or min-p works on the renormalised distribution", "[unit][sampler]") {
  // top_k = 3 leaves {0.5, 0.2, 0.15}, total 0.85, renormalised {0.588, 0.235, 0.176}. With
  // top_p = 0.8 the renormalised masses 0.588, 0.824 reach 0.8 at the second token. Against the
  // original scale (0.5, 0.7, 0.85 vs 0.8) a third token would be kept: this pins our choice.
  std::vector<float> p = five_probs();
  inferlab::top_k_filter(p, 3);
  inferlab::top_p_filter(p, 0.8f);
  REQUIRE(kept(p) == std::vector<int>{0, 1});

  // min_p = 0.3 leaves the same three tokens, so the same holds.
  p = five_probs();
  inferlab::min_p_filter(p, 0.3f);
  inferlab::top_p_filter(p, 0.8f);
  REQUIRE(kept(p) == std::vector<int>{0, 1});
}

TEST_CASE("the Sampler chains the steps: penalties, temperature, top-k, min-p, top-p",
          "[unit][sampler]") {
  // Logits log(p) with T = 1 reproduce p, so the filters see {0.5, 0.2, 0.15, 0.1, 0.05}.
  std::vector<float> logits;
  for (float q : five_probs()) logits.push_back(std::log(q));
  SamplingParams params;
  params.top_k = 4;      // drops 0.05
  params.min_p = 0.25f;  // threshold 0.125: drops 0.1
  params.top_p = 0.8f;   // on {0.5, 0.2, 0.15} / 0.85: 0.588, 0.824 -> keeps two
  Sampler sampler(params, 5);
  const std::vector<float> d = sampler.distribution(logits, {});
  const std::vector<double> expected = {0.5 / 0.7, 0.2 / 0.7, 0, 0, 0};
  const auto r = inferlab::test::all_close(d, expected, 5, 1e-6, 1e-5);
  INFO("max err " << r.max_abs_err << " first bad " << r.first_bad);
  REQUIRE(r.ok);
}

// ---------------------------------------------------------------------------------------------
// Drawing
// ---------------------------------------------------------------------------------------------

TEST_CASE("sample_from walks the cumulative mass and never returns a zero", "[unit][sampler]") {
  const std::vector<float> p = {0.0f, 0.5f, 0.0f, 0.5f, 0.0f};
  REQUIRE(inferlab::sample_from(p, 0.0f) == 1);
  REQUIRE(inferlab::sample_from(p, 0.49f) == 1);
  REQUIRE(inferlab::sample_from(p, 0.5f) == 3);  // cdf must EXCEED u * total
  const float largest_u = std::nextafter(1.0f, 0.0f);
  REQUIRE(inferlab::sample_from(p, largest_u) == 3);  // not the trailing zero
  // Unnormalised: weights 2 and 6, so the boundary is u = 0.25.
  const std::vector<float> w = {2.0f, 6.0f};
  REQUIRE(inferlab::sample_from(w, 0.24f) == 0);
  REQUIRE(inferlab::sample_from(w, 0.26f) == 1);
  REQUIRE_THROWS_AS(inferlab::sample_from(std::vector<float>{0.0f, 0.0f}, 0.3f), Error);
}

// ---------------------------------------------------------------------------------------------
// Worked numbers from the chapter text
// ---------------------------------------------------------------------------------------------

TEST_CASE("chapter worked example: min-p thresholds follow the top probability",
          "[unit][sampler]") {
  // Text: min_p = 0.1 with a top token at 0.6 keeps p >= 0.06; with a top token at 0.05 the
  // threshold is 0.005 and many more tokens stay. Both numbers are right.
  SECTION("confident model: p_max 0.6, threshold 0.06") {
    // 0.06 sits exactly on the threshold and is kept; 0.03 and below are dropped.
    std::vector<float> p = {0.6f, 0.2f, 0.08f, 0.06f, 0.03f, 0.02f, 0.01f};
    inferlab::min_p_filter(p, 0.1f);
    REQUIRE(kept(p) == std::vector<int>{0, 1, 2, 3});
  }
  SECTION("uncertain model: p_max 0.05, threshold 0.005") {
    // 19 tokens at 0.05, then 0.03, 0.012, 0.005 (on the threshold) and 0.003: sums to 1.
    std::vector<float> p(19, 0.05f);
    for (float q : {0.03f, 0.012f, 0.005f, 0.003f}) p.push_back(q);
    inferlab::min_p_filter(p, 0.1f);
    const std::vector<int> ids = kept(p);
    REQUIRE(ids.size() == 22);  // all but the 0.003 token
    REQUIRE(p.back() == 0.0f);
    // The lesson: 0.03 survives here but would not next to a 0.6 token.
    REQUIRE(p[19] == 0.03f);
  }
}

TEST_CASE("chapter worked example: the reference sampler's call", "[unit][sampler]") {
  // The text's sample(logits=[3, 2.5, 1, 0.5, -1], prev_ids=[0], temperature=0.7, top_p=0.9,
  // repetition_penalty=1.3). Computed in double: token 0's logit becomes 3 / 1.3 = 2.3077,
  // softmax(z / 0.7) = {0.3914, 0.5151, 0.0604, 0.0296, 0.0035}; sorted, the masses reach
  // 0.5151, 0.9065 >= 0.9, so tokens 1 and 0 remain, renormalised below. Note the penalty
  // flips the favourite: without it token 0 would have p = 0.634.
  const std::vector<float> logits = {3.0f, 2.5f, 1.0f, 0.5f, -1.0f};
  SamplingParams params;
  params.temperature = 0.7f;
  params.top_p = 0.9f;
  params.repetition_penalty = 1.3f;
  Sampler sampler(params, 5);
  const std::vector<float> d = sampler.distribution(logits, std::vector<int>{0});
  const std::vector<double> expected = {0.4317474167918342, 0.5682525832081657, 0, 0, 0};
  const auto r = inferlab::test::all_close(d, expected, 5, 1e-6, 1e-5);
  INFO("max err " << r.max_abs_err << " first bad " << r.first_bad);
  REQUIRE(r.ok);
  for (int i = 0; i < 1000; ++i) {
    const int t = sampler.sample(logits, std::vector<int>{0});
    REQUIRE((t == 0 || t == 1));
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

TEST_CASE("draws follow distribution() (chi-square) and never hit a filtered token",
          "[unit][sampler][slow]") {
  // 12 tokens, T = 0.8, top_k = 8, min_p = 0.12, top_p = 0.9. Each filter bites (computed in
  // double): top-k drops {4, 7, 9, 11}; min-p (threshold 0.0354) drops token 2; top-p keeps
  // {10, 1, 5, 3, 8} (mass 0.821 before token 8, 0.910 with it) and drops {0, 6}.
  const std::vector<float> logits = {1.0f, 2.2f,  0.4f, 1.8f, -0.3f, 2.0f,
                                     0.9f, -1.5f, 1.5f, 0.1f, 2.5f,  -0.8f};
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_k = 8;
  params.min_p = 0.12f;
  params.top_p = 0.9f;
  params.seed = 2024;
  Sampler sampler(params, static_cast<int>(logits.size()));
  const std::vector<float> q = sampler.distribution(logits, {});

  // First: the distribution itself is the hand-computed one.
  const std::vector<double> expected = {
      0, 0.23489701031864127, 0, 0.14247223863309075, 0, 0.1829379755772897, 0,
      0, 0.09791964213787223, 0, 0.3417731333331061,  0};
  const auto r = inferlab::test::all_close(q, expected, 12, 1e-6, 1e-5);
  INFO("distribution max err " << r.max_abs_err << " first bad " << r.first_bad);
  REQUIRE(r.ok);

  constexpr int kDraws = 200000;
  std::vector<long> counts(logits.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<std::size_t>(sampler.sample(logits, {}))];

  double chi2 = 0.0;
  int support = 0;
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (q[i] == 0.0f) {
      INFO("filtered token " << i << " drawn " << counts[i] << " times");
      REQUIRE(counts[i] == 0);
      continue;
    }
    ++support;
    const double e = kDraws * static_cast<double>(q[i]);
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  REQUIRE(support == 5);
  const double critical = chi_square_critical(support - 1, kZ999);
  INFO("chi-square " << chi2 << " with " << support - 1 << " dof, 0.999 critical " << critical);
  REQUIRE(chi2 < critical);
}

TEST_CASE("softmax_with_temperature through the softmax kernel gives a plain loop's bits",
          "[unit][sampler]") {
  // The plain loop (subtract the max, exp of the scaled difference, one double total): every
  // probability the kernel gives has its bits, so the statistical tests' distributions are the
  // ones this loop defines.
  auto plain_loop = [](std::vector<float> z, float T) {
    const float max_logit = *std::max_element(z.begin(), z.end());
    double total = 0.0;
    for (float& v : z) {
      v = std::exp((v - max_logit) / T);
      total += v;
    }
    const float inv = static_cast<float>(1.0 / total);
    for (float& p : z) p *= inv;
    return z;
  };
  std::uint64_t state = 12345;
  for (int n : {1, 2, 31, 512, 32001}) {
    for (float T : {0.3f, 1.0f, 1.7f}) {
      std::vector<float> z(static_cast<std::size_t>(n));
      for (float& v : z) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<float>(static_cast<std::int64_t>(state >> 40) % 2000) / 97.0f - 10.0f;
      }
      if (n > 2) z[1] = -std::numeric_limits<float>::infinity();  // a masked token
      const std::vector<float> want = plain_loop(z, T);
      inferlab::softmax_with_temperature(z, T);
      INFO("n " << n << " T " << T);
      CHECK(std::memcmp(z.data(), want.data(), z.size() * sizeof(float)) == 0);
    }
  }
}
