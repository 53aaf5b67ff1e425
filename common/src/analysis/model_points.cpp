// Whole-model workloads timed on this CPU (see model_points.hpp).
#include "inferlab/analysis/model_points.hpp"

#include <algorithm>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

namespace {

// Floats of the matrices one token multiplies through in the layers (not the classifier).
double layer_matrix_floats(const ModelConfig& c) {
  const double D = c.dim, H = c.hidden_dim, Q = c.q_dim(), KV = c.kv_dim();
  return c.n_layers * (2.0 * D * Q + 2.0 * D * KV + 3.0 * D * H);
}

}  // namespace

double forward_flops(const ModelConfig& c, int tokens, int first_pos, int logit_rows) {
  double attention = 0.0;  // q.k and p.v: 2 FLOPs x D per cached position, twice, per layer
  for (int t = 0; t < tokens; ++t) attention += 4.0 * c.n_layers * c.q_dim() * (first_pos + t + 1.0);
  return 2.0 * layer_matrix_floats(c) * tokens + 2.0 * double(c.vocab_size) * c.dim * logit_rows +
         attention;
}

ModelPoints measure_model_points(const Model& model, const ModelPointOptions& o) {
  const ModelConfig& c = model.config();
  if (o.reps < 1) throw Error("measure_model_points: reps must be >= 1");
  if (o.prompt_tokens < 1 || o.prompt_tokens > c.seq_len)
    throw Error(fmt::format("measure_model_points: prompt of {} tokens outside 1..{} (the context)",
                            o.prompt_tokens, c.seq_len));
  if (o.batches.empty() || o.batches.front() != 1 ||
      !std::is_sorted(o.batches.begin(), o.batches.end()))
    throw Error("measure_model_points: batches must be ascending and start at 1");
  if (o.decode_steps < 1 || 1 + o.decode_steps * (o.reps + 1) > c.seq_len)
    throw Error(
        fmt::format("measure_model_points: {} decode steps x {} repetitions exceed the "
                    "context of {} tokens",
                    o.decode_steps, o.reps + 1, c.seq_len));
  // Through the model runner, as every caller of the forward pass goes (CPU: chapter 03 places
  // these points on this machine's roofline).
  const std::unique_ptr<ModelRunner> runner = make_runner(model, Device::cpu);
  std::vector<float> logits;
  const double weight_bytes = model.bytes_read_per_token();  // as stored
  ModelPoints out;

  // Prefill: a fresh cache per repetition; only the last row goes through the classifier.
  {
    if (o.progress) o.progress(fmt::format("prefill of {} tokens", o.prompt_tokens));
    std::vector<int> prompt(static_cast<std::size_t>(o.prompt_tokens));
    for (int i = 0; i < o.prompt_tokens; ++i)
      prompt[std::size_t(i)] = (i * 7919 + 1) % c.vocab_size;
    KVCache cache = make_cache(*runner, o.prompt_tokens);
    std::vector<double> times;
    for (int r = 0; r <= o.reps; ++r) {  // the first run warms up (page faults, threads)
      cache.clear();
      const double t0 = now_seconds();
      run_sequence(*runner, prompt, 0, cache, LogitsMode::last, logits);
      if (r > 0) times.push_back(now_seconds() - t0);
    }
    ModelPoint& p = out.prefill;
    p.name = fmt::format("prefill {}", o.prompt_tokens);
    p.tokens = o.prompt_tokens;
    p.flops = forward_flops(c, o.prompt_tokens, 0, 1);
    p.bytes = weight_bytes;
    p.seconds = percentile(times, 50);
  }

  // Decode: B sequences step together, one new token each; each repetition runs decode_steps
  // steps, and the step time is the repetition's time / decode_steps.
  for (int B : o.batches) {
    if (o.progress) o.progress(fmt::format("decode, {} sequence{} together", B, B > 1 ? "s" : ""));
    const int capacity = 1 + o.decode_steps * (o.reps + 1);
    std::vector<KVCache> caches;
    caches.reserve(std::size_t(B));
    for (int b = 0; b < B; ++b) caches.push_back(make_cache(*runner, capacity));
    std::vector<int> tokens(static_cast<std::size_t>(B));
    std::vector<BatchEntry> batch(static_cast<std::size_t>(B));
    auto step = [&] {
      for (int b = 0; b < B; ++b) {
        tokens[std::size_t(b)] = (b * 31 + caches[std::size_t(b)].length() * 7 + 1) % c.vocab_size;
        batch[std::size_t(b)] = {std::span<const int>(&tokens[std::size_t(b)], 1),
                                 caches[std::size_t(b)].length(), &caches[std::size_t(b)]};
      }
      runner->step(batch, LogitsMode::last, logits);
    };
    step();  // warm-up, and every sequence starts from one cached token
    std::vector<double> times;
    for (int r = 0; r < o.reps; ++r) {
      const double t0 = now_seconds();
      for (int s = 0; s < o.decode_steps; ++s) step();
      times.push_back((now_seconds() - t0) / o.decode_steps);
    }
    // Counted at the middle of the measured positions.
    const int mid_pos = 1 + o.decode_steps * o.reps / 2;
    ModelPoint p;
    p.name = fmt::format("decode B={}", B);
    p.tokens = B;
    p.flops = B * forward_flops(c, 1, mid_pos, 1);
    p.bytes =
        weight_bytes + B * 2.0 * c.n_layers * double(mid_pos + 1) * c.kv_dim() * sizeof(float);
    p.seconds = percentile(times, 50);
    out.batched.push_back(p);
  }
  return out;
}

}  // namespace inferlab
