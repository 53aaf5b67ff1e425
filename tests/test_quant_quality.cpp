// Tests of the quality measures of chapter 09 (analysis/quant_quality.hpp): KL divergence,
// likelihood and top-1 on distributions small enough to work out by hand, the accumulator's
// mean, p99, agreement and perplexity, and on a synthetic model compare_quality()'s windows and
// compare_quality_chunks()'s llama-perplexity chunks.
#include <cmath>
#include <limits>
#include <vector>

#include "inferlab/analysis/format_compare.hpp"
#include "inferlab/analysis/quant_quality.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/runner.hpp"
#include "test_support.hpp"

using inferlab::QualityAccumulator;
using inferlab::QualityStats;

TEST_CASE("quant quality: KL divergence worked by hand", "[unit][quality]") {
  const float ln3 = std::log(3.0f);
  // P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3).
  const std::vector<float> p{0.0f, 0.0f}, q{0.0f, ln3};
  CHECK(inferlab::kl_divergence(p, q) == Approx(0.5 * std::log(4.0 / 3.0)).epsilon(1e-6));
  // Q || P the other way: 1/4 ln(1/2) + 3/4 ln(3/2).
  CHECK(inferlab::kl_divergence(q, p) ==
        Approx(0.25 * std::log(0.5) + 0.75 * std::log(1.5)).epsilon(1e-6));
  // Equal logits, and logits shifted by a constant, are the same distribution.
  CHECK(inferlab::kl_divergence(q, q) == 0.0);
  const std::vector<float> shifted{1000.0f, 1000.0f + ln3};  // no overflow either
  CHECK(inferlab::kl_divergence(q, shifted) == Approx(0.0).margin(1e-6));
  CHECK_THROWS_AS(inferlab::kl_divergence(p, std::vector<float>{0.0f}), inferlab::Error);
}

TEST_CASE("quant quality: likelihood and top token", "[unit][quality]") {
  const std::vector<float> q{0.0f, std::log(3.0f)};  // (1/4, 3/4)
  CHECK(inferlab::negative_log_likelihood(q, 0) == Approx(std::log(4.0)).epsilon(1e-6));
  CHECK(inferlab::negative_log_likelihood(q, 1) == Approx(std::log(4.0 / 3.0)).epsilon(1e-6));
  CHECK_THROWS_AS(inferlab::negative_log_likelihood(q, 2), inferlab::Error);
  CHECK(inferlab::top_token(q) == 1);
  CHECK(inferlab::top_token(std::vector<float>{2.0f, 5.0f, 5.0f, 1.0f}) == 1);  // lowest id
  CHECK_THROWS_AS(inferlab::top_token(std::vector<float>{}), inferlab::Error);
}

TEST_CASE("quant quality: the accumulator's mean, p99, agreement and perplexity",
          "[unit][quality]") {
  QualityAccumulator acc;
  CHECK(acc.stats().positions == 0);
  // Uniform logits over 8 tokens, scored against themselves: KL 0, agreement, perplexity 8.
  const std::vector<float> uniform(8, 0.0f);
  for (int i = 0; i < 4; ++i) acc.add(uniform, uniform, i);
  QualityStats s = acc.stats();
  CHECK(s.positions == 4);
  CHECK(s.kl_mean == 0.0);
  CHECK(s.kl_p99 == 0.0);
  CHECK(s.top1_agreement == 1.0);
  CHECK(s.perplexity == Approx(8.0).epsilon(1e-9));

  // Against a reference that puts its top on token 7: disagreement, and a known KL.
  std::vector<float> peaked(8, 0.0f);
  peaked[7] = std::log(8.0f);  // P = (1/15, ..., 8/15)
  acc.add(peaked, uniform, 0);
  s = acc.stats();
  const double kl = 7.0 / 15.0 * std::log(8.0 / 15.0) + 8.0 / 15.0 * std::log(64.0 / 15.0);
  CHECK(s.positions == 5);
  CHECK(s.kl_mean == Approx(kl / 5.0).epsilon(1e-6));
  // p99 of (0, 0, 0, 0, kl) by linear interpolation: rank 0.99 * 4 = 3.96.
  CHECK(s.kl_p99 == Approx(0.96 * kl).epsilon(1e-6));
  CHECK(s.top1_agreement == Approx(0.8));
  CHECK(s.perplexity == Approx(8.0).epsilon(1e-9));  // the compared model is still uniform
}

TEST_CASE("quant quality: first divergence of greedy sequences", "[unit][quality]") {
  using V = std::vector<int>;
  CHECK(inferlab::first_divergence(V{1, 2, 3}, V{1, 2, 3}) == -1);
  CHECK(inferlab::first_divergence(V{1, 2, 3}, V{1, 5, 3}) == 1);
  CHECK(inferlab::first_divergence(V{1, 2, 3}, V{1, 2}) == 2);
  CHECK(inferlab::first_divergence(V{}, V{4}) == 0);
  CHECK(inferlab::first_divergence(V{}, V{}) == -1);
}

namespace {

/// A synthetic stories260K model with a 16-token context and a made-up text of 20 tokens.
struct QualityCase {
  inferlab::Model model = [] {
    inferlab::SyntheticOptions o;
    o.seq_len = 16;
    return inferlab::make_synthetic_model("stories260K", o);
  }();
  std::vector<int> tokens = [this] {
    std::vector<int> t;
    for (int i = 0; i < 20; ++i) t.push_back((7 * i + 3) % model.config().vocab_size);
    return t;
  }();
};

}  // namespace

TEST_CASE("quant quality: compare_quality scores every token once, window by window",
          "[unit][quality]") {
  const QualityCase q;
  const int V = q.model.config().vocab_size;
  const inferlab::Model* models[] = {&q.model};

  // The model against itself: nothing changes; the perplexity is the windows' own.
  const std::vector<QualityStats> s = inferlab::compare_quality(q.model, models, q.tokens, 1, 8);
  REQUIRE(s.size() == 1);
  CHECK(s[0].positions == 20);
  CHECK(s[0].kl_mean == 0.0);
  CHECK(s[0].top1_agreement == 1.0);

  // The same perplexity by hand: windows [BOS, 7 tokens] x 2 and [BOS, 6 tokens].
  std::unique_ptr<inferlab::ModelRunner> runner =
      inferlab::make_runner(q.model, inferlab::Device::cpu);
  double nll = 0.0;
  for (std::size_t start = 0; start < q.tokens.size(); start += 7) {
    const std::size_t n = std::min<std::size_t>(7, q.tokens.size() - start);
    std::vector<int> fed{1};
    fed.insert(fed.end(), q.tokens.begin() + long(start), q.tokens.begin() + long(start + n - 1));
    inferlab::KVCache cache = inferlab::make_cache(*runner, int(n));
    std::vector<float> logits;
    inferlab::run_sequence(*runner, fed, 0, cache, inferlab::LogitsMode::all, logits);
    for (std::size_t r = 0; r < n; ++r) {
      nll += inferlab::negative_log_likelihood(
          std::span<const float>(logits.data() + r * std::size_t(V), std::size_t(V)),
          q.tokens[start + r]);
    }
  }
  CHECK(s[0].perplexity == Approx(std::exp(nll / 20.0)).epsilon(1e-9));

  // Without BOS the first token is context only.
  CHECK(inferlab::compare_quality(q.model, models, q.tokens, -1, 8)[0].positions == 19);
  // The window must fit the context (+1: the last token is predicted, not forwarded).
  CHECK_NOTHROW(inferlab::compare_quality(q.model, models, q.tokens, 1, 17));
  CHECK_THROWS_AS(inferlab::compare_quality(q.model, models, q.tokens, 1, 18), inferlab::Error);
  CHECK_THROWS_AS(inferlab::compare_quality(q.model, models, q.tokens, 1, 1), inferlab::Error);
  CHECK_THROWS_AS(inferlab::compare_quality(q.model, models, std::vector<int>{V}, 1, 8),
                  inferlab::Error);
}

TEST_CASE("quant quality: compare_quality_chunks scores llama-perplexity's positions",
          "[unit][quality]") {
  const QualityCase q;
  const int V = q.model.config().vocab_size;
  const inferlab::Model* models[] = {&q.model};

  // With BOS the text is [BOS, 20 tokens]: two whole chunks of 8, the tail of 5 left out; in
  // each, rows 4, 5, 6 (the second half, but the last token) are scored.
  const std::vector<QualityStats> s =
      inferlab::compare_quality_chunks(q.model, models, q.tokens, 1, 8);
  REQUIRE(s.size() == 1);
  CHECK(s[0].positions == 6);
  CHECK(s[0].kl_mean == 0.0);
  CHECK(s[0].top1_agreement == 1.0);

  // The same perplexity by hand: chunk i is text[8i, 8i + 8) with its first token made BOS.
  std::vector<int> text{1};
  text.insert(text.end(), q.tokens.begin(), q.tokens.end());
  std::unique_ptr<inferlab::ModelRunner> runner =
      inferlab::make_runner(q.model, inferlab::Device::cpu);
  double nll = 0.0;
  for (std::size_t start = 0; start + 8 <= text.size(); start += 8) {
    std::vector<int> fed(text.begin() + long(start), text.begin() + long(start + 7));
    fed[0] = 1;
    inferlab::KVCache cache = inferlab::make_cache(*runner, 7);
    std::vector<float> logits;
    inferlab::run_sequence(*runner, fed, 0, cache, inferlab::LogitsMode::all, logits);
    for (std::size_t r = 4; r < 7; ++r) {
      nll += inferlab::negative_log_likelihood(
          std::span<const float>(logits.data() + r * std::size_t(V), std::size_t(V)),
          text[start + r + 1]);
    }
  }
  CHECK(s[0].perplexity == Approx(std::exp(nll / 6.0)).epsilon(1e-9));
  // The windows of compare_quality() score other positions, so another perplexity.
  CHECK(inferlab::compare_quality(q.model, models, q.tokens, 1, 8)[0].perplexity !=
        Approx(s[0].perplexity).epsilon(1e-9));

  // Without BOS: 20 q.tokens, two chunks of 8 again; odd chunks score chunk - 1 - chunk / 2.
  CHECK(inferlab::compare_quality_chunks(q.model, models, q.tokens, -1, 8)[0].positions == 6);
  CHECK(inferlab::compare_quality_chunks(q.model, models, q.tokens, -1, 3)[0].positions == 6);
  CHECK(inferlab::compare_quality_chunks(q.model, models, q.tokens, 1, 17)[0].positions == 8);
  // A chunk must score something, fit the context (+1) and the text.
  CHECK_THROWS_AS(inferlab::compare_quality_chunks(q.model, models, q.tokens, 1, 2),
                  inferlab::ParameterError);
  CHECK_THROWS_AS(inferlab::compare_quality_chunks(q.model, models, q.tokens, 1, 18),
                  inferlab::ParameterError);
  const std::vector<int> short_text(q.tokens.begin(), q.tokens.begin() + 15);
  try {
    inferlab::compare_quality_chunks(q.model, models, short_text, -1, 16);
    FAIL("a text shorter than one chunk was accepted");
  } catch (const inferlab::ParameterError& e) {
    CHECK(e.parameter() == "chunk");
    CHECK(e.problem() == "16: the text has 15 tokens, fewer than one chunk");
  }
  CHECK_THROWS_AS(inferlab::compare_quality_chunks(q.model, models, std::vector<int>{V}, 1, 8),
                  inferlab::Error);
}

TEST_CASE("quant quality: the text is the one the docs name", "[unit][quality]") {
  const std::string& text = inferlab::quality_text();
  CHECK(text.rfind("It is a truth universally acknowledged", 0) == 0);
  CHECK(text.size() > 4000);
  CHECK(text.find("its solace was visiting and news.") != std::string::npos);
  CHECK(std::string(inferlab::quality_text_source()).find("1342") != std::string::npos);
}

TEST_CASE("format comparison: a float32 model against itself", "[unit][quality]") {
  inferlab::SyntheticOptions so;
  so.seq_len = 64;
  const inferlab::Model model = inferlab::make_synthetic_model("stories260K", so);
  const inferlab::Tokenizer tokenizer = inferlab::Tokenizer::synthetic(model.config().vocab_size);
  const inferlab::FormatModel formats[] = {{"f32", &model}};
  inferlab::FormatCompareOptions o;
  o.speed.prompt_tokens = 8;
  o.speed.decode_steps = 2;
  o.speed.reps = 1;
  o.window = 32;
  o.greedy_steps = 12;
  const std::vector<std::string> prompts{"Once upon a time", ""};
  const std::vector<inferlab::FormatMeasurement> runs = inferlab::compare_formats(
      model, formats, tokenizer, "The cat sat on the mat. It was warm.", prompts, o);
  REQUIRE(runs.size() == 1);
  const inferlab::FormatMeasurement& m = runs[0];
  // float32: 32 bits per weight, up to the packed matrices' padding.
  const double n = double(model.config().n_params());
  CHECK(m.model_bytes >= 4.0 * n);
  CHECK(m.bits_per_weight == Approx(8.0 * m.model_bytes / n));
  CHECK(m.bits_per_weight < 33.0);
  REQUIRE(m.points.batched.size() == 2);
  CHECK(m.points.batched[0].tokens == 1);
  CHECK(m.points.batched[1].tokens == 16);
  CHECK(m.points.prefill.tokens_per_second() > 0.0);
  // Stored bytes are the float bytes here, so a step reads at least the model once.
  CHECK(m.points.batched[0].bytes >= m.model_bytes);
  CHECK(m.quality.positions > 0);
  CHECK(m.quality.kl_mean == 0.0);
  CHECK(m.quality.top1_agreement == 1.0);
  CHECK(m.greedy_divergence == std::vector<int>{-1, -1});
  const std::vector<inferlab::RooflinePoint> points = inferlab::format_roofline_points(runs);
  REQUIRE(points.size() == 2);
  CHECK(points[0].label == "f32 B=1");
  CHECK(points[1].label == "f32 B=16");
  CHECK(points[1].intensity > points[0].intensity);
}
