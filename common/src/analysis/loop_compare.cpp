// Chapter 02's measurements: naive vs cached step latency, and the cost of f16/int8 KV storage.
#include "inferlab/analysis/loop_compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/base/timer.hpp"

namespace inferlab {

std::vector<int> doubling_positions(int last) {
  std::vector<int> p;
  for (int x = 8; x < last; x *= 2) p.push_back(x);
  p.push_back(last);
  return p;
}

std::vector<StepLatency> compare_step_latency(const Model& model, const std::vector<int>& tokens,
                                              const std::vector<int>& positions, DType kv_type,
                                              int reps, Device device) {
  const ModelConfig& c = model.config();
  std::unique_ptr<ModelRunner> runner = make_runner(model, device);
  std::vector<StepLatency> out;
  std::vector<float> logits;
  for (int pos : positions) {
    if (pos < 0 || pos >= int(tokens.size()) || pos >= c.seq_len) {
      throw Error(fmt::format("step latency: position {} outside the sequence of {} tokens", pos,
                              tokens.size()));
    }
    StepLatency s;
    s.position = pos;
    std::vector<double> naive_samples, cached_samples;
    std::vector<float> naive;
    for (int r = 0; r < std::max(reps, 1); ++r) {
      const double t0 = now_seconds();
      // The naive step: a fresh cache, the whole sequence forwarded again.
      KVCache fresh = make_cache(*runner, pos + 1, kv_type);
      run_sequence(*runner, std::span<const int>(tokens.data(), pos + 1), 0, fresh,
                   LogitsMode::last, naive);
      naive_samples.push_back(now_seconds() - t0);
    }
    // The cache as a decode step finds it: positions 0..pos-1 filled (untimed).
    KVCache cache = make_cache(*runner, pos + 1, kv_type);
    if (pos > 0)
      run_sequence(*runner, std::span<const int>(tokens.data(), pos), 0, cache, LogitsMode::last,
                   logits);
    for (int r = 0; r < std::max(reps, 1); ++r) {
      cache.set_length(pos);  // forget the step's own row: it is rewritten identically
      const double t0 = now_seconds();
      run_sequence(*runner, std::span<const int>(&tokens[pos], 1), pos, cache, LogitsMode::last,
                   logits);
      cached_samples.push_back(now_seconds() - t0);
    }
    // The median resists one slow sample (a busy core); the spread says how much to trust it.
    const Summary n = summarize(naive_samples), k = summarize(cached_samples);
    s.naive_s = n.p50;
    s.cached_s = k.p50;
    s.naive_spread = n.p50 > 0 ? (n.max - n.min) / n.p50 : 0.0;
    s.cached_spread = k.p50 > 0 ? (k.max - k.min) / k.p50 : 0.0;
    s.identical = logits.size() == naive.size() &&
                  std::memcmp(logits.data(), naive.data(), logits.size() * sizeof(float)) == 0;
    out.push_back(s);
  }
  return out;
}

KVQuality compare_kv_type(const Model& model, const Tokenizer& tokenizer,
                          const std::vector<std::string>& prompts, int steps, DType type) {
  const ModelConfig& c = model.config();
  KVQuality q;
  q.type = type;
  q.bytes_per_token = kv_storage_bytes_per_token(c, type);
  std::unique_ptr<ModelRunner> runner = make_runner(model, Device::cpu);
  double sum = 0.0;
  long count = 0;
  for (const std::string& prompt : prompts) {
    GenerateOptions o;
    o.prompt = prompt;
    o.steps = steps;
    o.sampling.temperature = 0.0f;
    o.loop = LoopKind::cached;
    const GenerationResult ref = generate(model, tokenizer, o);
    o.kv_type = type;
    const GenerationResult got = generate(model, tokenizer, o);

    // (1) Teacher-forced: both caches see the f32 greedy sequence, so position i compares like
    // with like even after the free-running sequences would have diverged.
    const std::span<const int> fed(ref.tokens.data(), ref.tokens.size() - 1);
    KVCache ref_cache = make_cache(*runner, int(fed.size()), DType::f32);
    KVCache cache = make_cache(*runner, int(fed.size()), type);
    std::vector<float> a, b;
    run_sequence(*runner, fed, 0, ref_cache, LogitsMode::all, a);
    run_sequence(*runner, fed, 0, cache, LogitsMode::all, b);
    const int V = c.vocab_size;
    for (std::size_t row = 0; row < fed.size(); ++row) {
      const float* ra = a.data() + row * V;
      const float* rb = b.data() + row * V;
      for (int i = 0; i < V; ++i) {
        const double d = std::fabs(double(ra[i]) - rb[i]);
        q.max_abs_logit_diff = std::max(q.max_abs_logit_diff, d);
        sum += d;
      }
      count += V;
      q.argmax_changed +=
          (std::max_element(ra, ra + V) - ra) != (std::max_element(rb, rb + V) - rb);
      ++q.positions;
    }
    // (2) Free-running greedy continuations.
    ++q.sequences;
    const std::size_t n = std::max(ref.tokens.size(), got.tokens.size());
    int changed = 0;
    for (std::size_t i = ref.prompt_tokens.size(); i < n; ++i) {
      const int x = i < ref.tokens.size() ? ref.tokens[i] : -1;
      const int y = i < got.tokens.size() ? got.tokens[i] : -1;
      changed += x != y;
    }
    q.tokens_changed += changed;
    q.sequences_changed += changed > 0;
  }
  q.mean_abs_logit_diff = count ? sum / double(count) : 0.0;
  return q;
}

const std::vector<std::string>& kv_quality_prompts() {
  static const std::vector<std::string> prompts = {"Once upon a time",
                                                   "",
                                                   "Lily and Tom went to the",
                                                   "The cat sat on the",
                                                   "One day, a little boy named Tim found a",
                                                   "Hi"};
  return prompts;
}

std::vector<KVQuality> compare_kv_types(const Model& model, const Tokenizer& tokenizer, int steps,
                                        const std::function<void(DType)>& progress) {
  std::vector<KVQuality> out;
  for (DType t : {DType::f32, DType::f16, DType::int8}) {
    if (progress) progress(t);
    out.push_back(compare_kv_type(model, tokenizer, kv_quality_prompts(), steps, t));
  }
  return out;
}

}  // namespace inferlab
