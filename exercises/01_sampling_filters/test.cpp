// Exercise 01's test: hand-built distributions with hand-computed answers (the min-p example of
// chapter 01 among them), properties on random distributions, and agreement with the core's
// inferlab::top_p_filter / inferlab::min_p_filter.

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "exercise.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace {

using Probs = std::vector<float>;

Probs top_p(Probs probs, float p) {
  inferlab::ex01::top_p_filter(probs, p);
  return probs;
}

Probs min_p(Probs probs, float p) {
  inferlab::ex01::min_p_filter(probs, p);
  return probs;
}

/// Softmax of logits / temperature, written out here so the test does not depend on the core.
Probs softmax(const std::vector<double>& logits, double temperature) {
  double max_z = logits[0];
  for (double z : logits) max_z = std::max(max_z, z);
  std::vector<double> e(logits.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    e[i] = std::exp((logits[i] - max_z) / temperature);
    sum += e[i];
  }
  Probs p(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) p[i] = static_cast<float>(e[i] / sum);
  return p;
}

/// A random, normalised, peaked distribution over @p n tokens (u^4 makes a few tokens dominate,
/// like a real model's output). Uses raw mt19937 words, so it is the same on every platform.
Probs random_distribution(std::mt19937& gen, std::size_t n) {
  Probs p(n);
  double sum = 0.0;
  for (float& x : p) {
    const double u = (gen() + 0.5) / 4294967296.0;
    x = static_cast<float>(u * u * u * u);
    sum += x;
  }
  for (float& x : p) x = static_cast<float>(x / sum);
  return p;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// min-p
// ------------------------------------------------------------------------------------------------

TEST_CASE("min-p, confident model: min_p 0.1 with a leading token at 0.6 cuts below 0.06",
          "[exercise][ex01]") {
  // The chapter's worked example: threshold = 0.1 * 0.6 = 0.06.
  const Probs in = {0.6f, 0.2f, 0.1f, 0.07f, 0.03f};
  const Probs out = min_p(in, 0.1f);
  CHECK(out == Probs{0.6f, 0.2f, 0.1f, 0.07f, 0.0f});  // 0.03 < 0.06 is cut
}

TEST_CASE("min-p, unsure model: min_p 0.1 with a leading token at 0.05 cuts only below 0.005",
          "[exercise][ex01]") {
  // The same example's second half: threshold = 0.1 * 0.05 = 0.005, so far more tokens stay.
  // ids 0..29: 0.03 each, id 30: 0.05 (the max), ids 31..41: 0.004, ids 42..43: 0.003 (sum 1).
  Probs in(44);
  for (int i = 0; i < 30; ++i) in[i] = 0.03f;
  in[30] = 0.05f;
  for (int i = 31; i < 42; ++i) in[i] = 0.004f;
  in[42] = in[43] = 0.003f;
  const Probs out = min_p(in, 0.1f);

  int kept = 0;
  for (float p : out) kept += p > 0.0f;
  CHECK(kept == 31);
  // A token at 0.03 was cut when the model was confident; here it survives.
  CHECK(out[0] == 0.03f);
  CHECK(out[30] == 0.05f);
  CHECK(out[31] == 0.0f);
  CHECK(out[43] == 0.0f);
}

TEST_CASE("min-p keeps a token exactly at the threshold", "[exercise][ex01]") {
  // Dyadic values, exact in float: threshold = 0.25 * 0.5 = 0.125.
  CHECK(min_p({0.5f, 0.125f, 0.0625f, 0.25f}, 0.25f) == Probs{0.5f, 0.125f, 0.0f, 0.25f});
}

TEST_CASE("min-p needs no normalisation: only ratios to the maximum matter", "[exercise][ex01]") {
  CHECK(min_p({6.0f, 2.0f, 1.0f, 0.5f}, 0.25f) == Probs{6.0f, 2.0f, 0.0f, 0.0f});  // cut: 1.5
}

TEST_CASE("min-p edge values: 0 is a no-op, 1 keeps only the most probable tokens",
          "[exercise][ex01]") {
  const Probs in = {0.4f, 0.2f, 0.4f};
  CHECK(min_p(in, 0.0f) == in);
  CHECK(min_p(in, 1.0f) == Probs{0.4f, 0.0f, 0.4f});  // a tie at the top keeps both
  CHECK(min_p({}, 0.5f).empty());
}

// ------------------------------------------------------------------------------------------------
// top-p
// ------------------------------------------------------------------------------------------------

TEST_CASE("top-p keeps the smallest most-probable set reaching top_p", "[exercise][ex01]") {
  // Sorted: id1 0.4, id3 0.3, id2 0.2, id0 0.1; cumulative 0.4, 0.7, 0.9, 1.0.
  const Probs in = {0.1f, 0.4f, 0.2f, 0.3f};
  CHECK(top_p(in, 0.3f) == Probs{0.0f, 0.4f, 0.0f, 0.0f});   // 0.4 already crosses 0.3
  CHECK(top_p(in, 0.5f) == Probs{0.0f, 0.4f, 0.0f, 0.3f});   // 0.7 crosses 0.5
  CHECK(top_p(in, 0.75f) == Probs{0.0f, 0.4f, 0.2f, 0.3f});  // 0.9 crosses 0.75
  CHECK(top_p(in, 0.95f) == in);                             // only 1.0 reaches 0.95
}

TEST_CASE("top-p: the token whose mass reaches top_p exactly is the last one kept",
          "[exercise][ex01]") {
  // Dyadic values, exact in float. Sorted: id1 0.5, id2 0.25, id0 0.125, id3 0.125.
  const Probs in = {0.125f, 0.5f, 0.25f, 0.125f};
  CHECK(top_p(in, 0.5f) == Probs{0.0f, 0.5f, 0.0f, 0.0f});     // 0.5 reaches 0.5: stop
  CHECK(top_p(in, 0.625f) == Probs{0.0f, 0.5f, 0.25f, 0.0f});  // 0.75 crosses 0.625
  // 0.875 crosses 0.8; of the two tokens at 0.125 the lower id counts as more probable.
  CHECK(top_p(in, 0.8f) == Probs{0.125f, 0.5f, 0.25f, 0.0f});
}

TEST_CASE("top-p measures mass relative to the sum of its input", "[exercise][ex01]") {
  // {4, 2, 1, 1} is {0.5, 0.25, 0.125, 0.125} unnormalised: 0.75 crosses 0.7.
  CHECK(top_p({4.0f, 2.0f, 1.0f, 1.0f}, 0.7f) == Probs{4.0f, 2.0f, 0.0f, 0.0f});
}

TEST_CASE("top-p edge values: 1 is a no-op, a tiny top_p keeps only the argmax",
          "[exercise][ex01]") {
  const Probs in = {0.2f, 0.1f, 0.6f, 0.1f};
  CHECK(top_p(in, 1.0f) == in);
  CHECK(top_p(in, 1e-6f) == Probs{0.0f, 0.0f, 0.6f, 0.0f});
  CHECK(top_p({}, 0.5f).empty());
}

TEST_CASE("top-p on the chapter's sampler example (T 0.7, repetition penalty 1.3 on token 0)",
          "[exercise][ex01]") {
  // logits {3.0, 2.5, 1.0, 0.5, -1.0}; token 0 was seen before, so 3.0 / 1.3 = 2.308. At T 0.7
  // the probabilities are about {0.391, 0.515, 0.060, 0.030, 0.003}: token 1 now leads, and
  // 0.515 + 0.391 = 0.907 crosses 0.9, so top-p 0.9 keeps exactly tokens 1 and 0.
  const Probs probs = softmax({3.0 / 1.3, 2.5, 1.0, 0.5, -1.0}, 0.7);
  const Probs out = top_p(probs, 0.9f);
  CHECK(out == Probs{probs[0], probs[1], 0.0f, 0.0f, 0.0f});
  // Without the penalty token 0 leads with 0.634 and 0.634 + 0.310 = 0.944 crosses 0.9.
  const Probs plain = softmax({3.0, 2.5, 1.0, 0.5, -1.0}, 0.7);
  CHECK(top_p(plain, 0.9f) == Probs{plain[0], plain[1], 0.0f, 0.0f, 0.0f});
}

// ------------------------------------------------------------------------------------------------
// Properties on random distributions (stand on their own, whatever the core does)
// ------------------------------------------------------------------------------------------------

TEST_CASE("top-p and min-p on random distributions obey their definitions", "[exercise][ex01]") {
  std::mt19937 gen(1234);
  for (std::size_t n : {1u, 2u, 31u, 33u, 4097u}) {
    const Probs in = random_distribution(gen, n);
    for (float p : {0.1f, 0.5f, 0.9f, 0.95f}) {
      INFO("top-p, vocabulary " << n << ", top_p " << p);
      const Probs out = top_p(in, p);
      double kept_mass = 0.0;
      float smallest_kept = 2.0f, largest_cut = -1.0f;
      for (std::size_t i = 0; i < n; ++i) {
        if (out[i] != 0.0f) {
          REQUIRE(out[i] == in[i]);  // a kept token keeps its value
          kept_mass += out[i];
          smallest_kept = std::min(smallest_kept, out[i]);
        } else {
          largest_cut = std::max(largest_cut, in[i]);
        }
      }
      CHECK(largest_cut <= smallest_kept);          // the most probable are kept
      CHECK(kept_mass >= p - 1e-5);                 // the kept mass reaches top_p...
      CHECK(kept_mass - smallest_kept < p + 1e-5);  // ...and no smaller set does
    }
    for (float m : {0.05f, 0.1f, 0.5f}) {
      INFO("min-p, vocabulary " << n << ", min_p " << m);
      const Probs out = min_p(in, m);
      const float cut = m * *std::max_element(in.begin(), in.end());
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(out[i] == (in[i] < cut ? 0.0f : in[i]));
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Agreement with the core's sampler (same contract, written independently)
// ------------------------------------------------------------------------------------------------

TEST_CASE("top-p and min-p agree with the core's inferlab::top_p_filter / min_p_filter",
          "[exercise][ex01]") {
  std::mt19937 gen(42);
  for (std::size_t n : {1u, 2u, 31u, 33u, 4097u, 32001u}) {
    const Probs in = random_distribution(gen, n);
    for (float p : {0.1f, 0.5f, 0.9f, 0.95f, 1.0f}) {
      INFO("top-p, vocabulary " << n << ", top_p " << p);
      Probs mine = in, core = in;
      inferlab::ex01::top_p_filter(mine, p);
      inferlab::top_p_filter(core, p);
      CHECK(mine == core);
    }
    for (float m : {0.0f, 0.05f, 0.1f, 0.5f, 1.0f}) {
      INFO("min-p, vocabulary " << n << ", min_p " << m);
      Probs mine = in, core = in;
      inferlab::ex01::min_p_filter(mine, m);
      inferlab::min_p_filter(core, m);
      CHECK(mine == core);
    }
  }
}
