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

std::vector<QualityStats> compare_quality(const Model& reference,
                                          std::span<const Model* const> models,
                                          std::span<const int> tokens, int bos, int window) {
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
  if (window < 2 || window > c.seq_len + 1) {
    throw Error(fmt::format("compare_quality: window {} outside [2, {}] (the context + 1)", window,
                            c.seq_len + 1));
  }
  if (tokens.empty()) throw Error("compare_quality: no tokens to score");
  const int V = c.vocab_size;
  for (int t : tokens) {
    if (t < 0 || t >= V)
      throw Error(fmt::format("compare_quality: token {} outside [0, {})", t, V));
  }
  if (bos >= V) throw Error(fmt::format("compare_quality: BOS {} outside [0, {})", bos, V));

  std::unique_ptr<ModelRunner> ref_runner = make_runner(reference, Device::cpu);
  std::vector<std::unique_ptr<ModelRunner>> runners;
  for (const Model* m : models) runners.push_back(make_runner(*m, Device::cpu));
  std::vector<QualityAccumulator> acc(models.size());

  // Without BOS a window starts with the token before its run (context only), so every token
  // but the text's first is scored.
  const std::size_t per_window = std::size_t(window) - 1;
  std::vector<int> input;
  std::vector<float> ref_logits, logits;
  std::size_t start = bos >= 0 ? 0 : 1;  // first scored token
  while (start < tokens.size()) {
    const std::size_t count = std::min(per_window, tokens.size() - start);
    input.clear();
    input.push_back(bos >= 0 ? bos : tokens[start - 1]);
    input.insert(input.end(), tokens.begin() + long(start), tokens.begin() + long(start + count));
    // Row r predicts input[r + 1] = tokens[start + r]; the last row's prediction is not scored.
    const std::span<const int> fed(input.data(), count);
    KVCache ref_cache = make_cache(*ref_runner, int(count));
    run_sequence(*ref_runner, fed, 0, ref_cache, LogitsMode::all, ref_logits);
    for (std::size_t k = 0; k < models.size(); ++k) {
      KVCache cache = make_cache(*runners[k], int(count));
      run_sequence(*runners[k], fed, 0, cache, LogitsMode::all, logits);
      for (std::size_t r = 0; r < count; ++r) {
        acc[k].add(std::span<const float>(ref_logits.data() + r * V, std::size_t(V)),
                   std::span<const float>(logits.data() + r * V, std::size_t(V)),
                   tokens[start + r]);
      }
    }
    start += count;
  }
  std::vector<QualityStats> out;
  for (const QualityAccumulator& a : acc) out.push_back(a.stats());
  return out;
}

int first_divergence(std::span<const int> reference, std::span<const int> test) {
  const std::size_t n = std::min(reference.size(), test.size());
  for (std::size_t i = 0; i < n; ++i)
    if (reference[i] != test[i]) return int(i);
  return reference.size() == test.size() ? -1 : int(n);
}

}  // namespace inferlab
