// Output quality of a quantized model against a reference: KL divergence, top-1 agreement,
// perplexity, greedy divergence.
#include "inferlab/analysis/quant_quality.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

namespace {

// log sum_i exp(x_i), shifted by the maximum so that no exp overflows.
double log_sum_exp(std::span<const float> x) {
  const double top = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (float v : x) sum += std::exp(double(v) - top);
  return top + std::log(sum);
}

}  // namespace

double kl_divergence(std::span<const float> reference, std::span<const float> test) {
  if (reference.empty() || reference.size() != test.size()) {
    throw Error(fmt::format("kl_divergence: logits of {} and {} entries (equal, non-zero sizes)",
                            reference.size(), test.size()));
  }
  const double lse_p = log_sum_exp(reference), lse_q = log_sum_exp(test);
  double kl = 0.0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double log_p = double(reference[i]) - lse_p;
    const double log_q = double(test[i]) - lse_q;
    kl += std::exp(log_p) * (log_p - log_q);
  }
  // Each term is P_i log(P_i / Q_i); their sum is >= 0, but rounding can leave -1e-17.
  return std::max(kl, 0.0);
}

double negative_log_likelihood(std::span<const float> logits, int token) {
  if (token < 0 || std::size_t(token) >= logits.size()) {
    throw Error(fmt::format("negative_log_likelihood: token {} outside a vocabulary of {}", token,
                            logits.size()));
  }
  return log_sum_exp(logits) - double(logits[std::size_t(token)]);
}

int top_token(std::span<const float> logits) {
  if (logits.empty()) throw Error("top_token: no logits");
  // max_element returns the first of equal maxima: the lowest id.
  return int(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void QualityAccumulator::add(std::span<const float> reference, std::span<const float> test,
                             int next_token) {
  const double kl = kl_divergence(reference, test);
  const double nll = negative_log_likelihood(test, next_token);
  kl_.push_back(kl);
  agree_ += top_token(reference) == top_token(test);
  nll_sum_ += nll;
}

QualityStats QualityAccumulator::stats() const {
  QualityStats s;
  s.positions = int(kl_.size());
  if (kl_.empty()) return s;
  const double n = double(kl_.size());
  double sum = 0.0;
  for (double v : kl_) sum += v;
  s.kl_mean = sum / n;
  s.kl_p99 = percentile(kl_, 99.0);
  s.top1_agreement = double(agree_) / n;
  s.perplexity = std::exp(nll_sum_ / n);
  return s;
}

namespace {

// The runners of a quality comparison and one accumulator per compared model. The constructor
// checks what every scheme needs: the same model shapes, and token and BOS ids in range.
class QualityScorer {
 public:
  QualityScorer(const Model& reference, std::span<const Model* const> models,
                std::span<const int> tokens, int bos)
      : vocab_(reference.config().vocab_size), acc_(models.size()) {
    const ModelConfig& c = reference.config();
    for (const Model* m : models) {
      const ModelConfig& mc = m->config();
      if (mc.vocab_size != c.vocab_size || mc.dim != c.dim || mc.n_layers != c.n_layers) {
        throw Error(
            fmt::format("compare_quality: {} is not the same model as {} (dim {} vs {}, "
                        "layers {} vs {}, vocabulary {} vs {})",
                        m->name(), reference.name(), mc.dim, c.dim, mc.n_layers, c.n_layers,
                        mc.vocab_size, c.vocab_size));
      }
    }
    if (tokens.empty()) throw Error("compare_quality: no tokens to score");
    for (int t : tokens) {
      if (t < 0 || t >= vocab_)
        throw Error(fmt::format("compare_quality: token {} outside [0, {})", t, vocab_));
    }
    if (bos >= vocab_)
      throw Error(fmt::format("compare_quality: BOS {} outside [0, {})", bos, vocab_));
    ref_runner_ = make_runner(reference, Device::cpu);
    for (const Model* m : models) runners_.push_back(make_runner(*m, Device::cpu));
  }

  // Forwards @p fed from a fresh cache through the reference and every model; logits row
  // first_row + j is scored against targets[j] (rows before first_row are context only).
  void score(std::span<const int> fed, std::size_t first_row, std::span<const int> targets) {
    const std::size_t V = std::size_t(vocab_);
    KVCache ref_cache = make_cache(*ref_runner_, int(fed.size()));
    run_sequence(*ref_runner_, fed, 0, ref_cache, LogitsMode::all, ref_logits_);
    for (std::size_t k = 0; k < runners_.size(); ++k) {
      KVCache cache = make_cache(*runners_[k], int(fed.size()));
      run_sequence(*runners_[k], fed, 0, cache, LogitsMode::all, logits_);
      for (std::size_t j = 0; j < targets.size(); ++j) {
        const std::size_t r = first_row + j;
        acc_[k].add(std::span<const float>(ref_logits_.data() + r * V, V),
                    std::span<const float>(logits_.data() + r * V, V), targets[j]);
      }
    }
  }

  std::vector<QualityStats> stats() const {
    std::vector<QualityStats> out;
    for (const QualityAccumulator& a : acc_) out.push_back(a.stats());
    return out;
  }

 private:
  int vocab_;
  std::unique_ptr<ModelRunner> ref_runner_;
  std::vector<std::unique_ptr<ModelRunner>> runners_;
  std::vector<QualityAccumulator> acc_;
  std::vector<float> ref_logits_, logits_;  // one window's rows, (rows, V)
};

}  // namespace

std::vector<QualityStats> compare_quality(const Model& reference,
                                          std::span<const Model* const> models,
                                          std::span<const int> tokens, int bos, int window) {
  const ModelConfig& c = reference.config();
  if (window < 2 || window > c.seq_len + 1) {
    throw Error(fmt::format("compare_quality: window {} outside [2, {}] (the context + 1)", window,
                            c.seq_len + 1));
  }
  QualityScorer scorer(reference, models, tokens, bos);

  // Without BOS a window starts with the token before its run (context only), so every token
  // but the text's first is scored.
  const std::size_t per_window = std::size_t(window) - 1;
  std::vector<int> input;
  std::size_t start = bos >= 0 ? 0 : 1;  // first scored token
  while (start < tokens.size()) {
    const std::size_t count = std::min(per_window, tokens.size() - start);
    input.clear();
    input.push_back(bos >= 0 ? bos : tokens[start - 1]);
    input.insert(input.end(), tokens.begin() + long(start), tokens.begin() + long(start + count));
    // Row r predicts input[r + 1] = tokens[start + r]; the last row's prediction is not scored.
    scorer.score(std::span<const int>(input.data(), count), 0, tokens.subspan(start, count));
    start += count;
  }
  return scorer.stats();
}

std::vector<QualityStats> compare_quality_chunks(const Model& reference,
                                                 std::span<const Model* const> models,
                                                 std::span<const int> tokens, int bos,
                                                 int chunk) {
  const int context = reference.config().seq_len;
  if (chunk < 3 || chunk > context + 1) {
    throw ParameterError("chunk", fmt::format("{}: outside [3, {}] (a chunk's second half is "
                                              "scored; the model's context + 1)",
                                              chunk, context + 1));
  }
  QualityScorer scorer(reference, models, tokens, bos);
  std::vector<int> text;  // llama-perplexity tokenizes with BOS when the tokenizer adds one
  if (bos >= 0) text.push_back(bos);
  text.insert(text.end(), tokens.begin(), tokens.end());
  const std::size_t n = std::size_t(chunk), chunks = text.size() / n;
  if (chunks == 0) {
    throw ParameterError("chunk", fmt::format("{}: the text has {} tokens, fewer than one chunk",
                                              chunk, text.size()));
  }
  const std::size_t first = n / 2;  // rows [first, n - 1) are scored
  std::vector<int> input;
  for (std::size_t i = 0; i < chunks; ++i) {
    input.assign(text.begin() + long(i * n), text.begin() + long((i + 1) * n));
    if (bos >= 0) input[0] = bos;  // every chunk starts as the first: BOS replaces its token
    // Row r predicts input[r + 1]; the last token is only predicted, so it is not forwarded.
    scorer.score(std::span<const int>(input.data(), n - 1), first,
                 std::span<const int>(input.data() + first + 1, n - 1 - first));
  }
  return scorer.stats();
}

int first_divergence(std::span<const int> reference, std::span<const int> test) {
  const std::size_t n = std::min(reference.size(), test.size());
  for (std::size_t i = 0; i < n; ++i)
    if (reference[i] != test[i]) return int(i);
  return reference.size() == test.size() ? -1 : int(n);
}

}  // namespace inferlab
