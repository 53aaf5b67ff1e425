// The serving loop with its two clocks: the real model, and the roofline simulator.
#include "inferlab/engine.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/timer.hpp"

namespace inferlab {

namespace {

// The two clocks. Real: seconds since the run began, and waiting really sleeps. Sim: a number
// that only moves when a step is "run" or when the engine idles until the next arrival.
class RealClock {
 public:
  RealClock() : t0_(now_seconds()) {}
  double now() const { return now_seconds() - t0_; }
  void wait_until(double t) const {
    const double dt = t - now();
    if (dt > 0) std::this_thread::sleep_for(std::chrono::duration<double>(dt));
  }

 private:
  double t0_;
};

class SimClock {
 public:
  double now() const { return t_; }
  void wait_until(double t) { t_ = std::max(t_, t); }
  void advance(double dt) { t_ += dt; }

 private:
  double t_ = 0.0;
};

// Chapter 01's text: the prompt echoed, then every generated token up to (not including) a
// final end-of-text BOS, through a StreamDecoder so no UTF-8 character is ever cut.
std::string streamed_text(const Tokenizer& tokenizer, const std::vector<int>& tokens,
                          int prompt_tokens) {
  StreamDecoder printer(tokenizer);
  std::string text;
  std::size_t end = tokens.size();
  if (end > static_cast<std::size_t>(prompt_tokens) && tokens.back() == kBosToken) --end;
  for (std::size_t i = 1; i < end; ++i) text += printer.push(tokens[i - 1], tokens[i]);
  return text + printer.flush();
}

// The loop both engines share. `run_step(plan)` executes the step (appending one token to every
// chunk that samples) and returns the time it ended on `clock`.
template <class Clock, class RunStep>
EngineRun serve(std::vector<Sequence>& seqs, const SchedulerConfig& config, Clock& clock,
                RunStep&& run_step, const char* clock_name) {
  Scheduler scheduler(config);
  std::vector<std::size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return seqs[a].request.arrival < seqs[b].request.arrival;
  });

  EngineRun run;
  run.clock = clock_name;
  run.scheduler = config;
  std::size_t next = 0;  // next arrival in `order`
  while (next < order.size() || scheduler.has_work()) {
    const double now = clock.now();
    while (next < order.size() && seqs[order[next]].request.arrival <= now)
      scheduler.add(seqs[order[next++]]);
    const StepPlan plan = scheduler.schedule();
    if (plan.empty()) {
      if (next == order.size()) throw Error("engine: work left but the scheduler planned nothing");
      clock.wait_until(seqs[order[next]].request.arrival);  // idle until someone arrives
      continue;
    }
    EngineStep step;
    step.start = now;
    step.decode_tokens = plan.decode_tokens;
    step.prefill_tokens = plan.prefill_tokens;
    step.running = static_cast<int>(scheduler.running().size());
    step.active = static_cast<int>(plan.chunks.size());
    step.waiting = static_cast<int>(scheduler.waiting().size());
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.seq->admitted_at < 0) c.seq->admitted_at = now;
    }
    step.end = run_step(plan);
    for (const ScheduledChunk& c : plan.chunks) {
      Sequence& s = *c.seq;
      step.chunks.push_back({s.request.id, s.slot, c.start, c.count, c.prefill, c.samples});
      if (!c.samples) continue;
      s.timeline.token_times.push_back(step.end);
      const bool eos = !s.request.ignore_eos && s.tokens.back() == kBosToken;
      if (eos || s.generated() >= s.max_new_tokens) {
        s.status = SequenceStatus::finished;
        s.cache.reset();  // a finished request's memory goes back at once
      }
    }
    scheduler.complete_step(plan);
    run.steps.push_back(std::move(step));
  }

  std::vector<RequestMetrics> metrics;
  for (Sequence& s : seqs) {
    RequestResult r;
    r.request = s.request;
    r.prompt_tokens.assign(s.tokens.begin(), s.tokens.begin() + s.prompt_tokens);
    r.tokens = s.tokens;
    r.slot = s.slot;
    r.admitted_at = s.admitted_at;
    r.timeline = s.timeline;
    r.metrics = request_metrics(s.timeline);
    metrics.push_back(r.metrics);
    run.requests.push_back(std::move(r));
  }
  std::sort(run.requests.begin(), run.requests.end(),
            [](const RequestResult& a, const RequestResult& b) { return a.request.id < b.request.id; });
  double last = 0.0;
  for (const RequestResult& r : run.requests) last = std::max(last, r.timeline.token_times.back());
  run.metrics = serving_metrics(metrics, last > 0.0 ? last : 1e-9);
  double occupied = 0.0, active = 0.0;
  for (const EngineStep& s : run.steps) {
    occupied += s.running;
    active += s.active;
  }
  const double denom = static_cast<double>(run.steps.size()) * config.max_seqs;
  run.mean_occupancy = run.steps.empty() ? 0.0 : occupied / denom;
  run.mean_slot_utilisation = run.steps.empty() ? 0.0 : active / denom;
  return run;
}

}  // namespace

StepShape step_shape(const std::vector<StepChunk>& chunks) {
  StepShape shape;
  for (const StepChunk& c : chunks) {
    if (c.prefill) {
      shape.add_prefill(c.count, c.start);
    } else {
      shape.add_decode(c.start + 1);  // the new token attends to itself and everything before
    }
  }
  return shape;
}

EngineRun run_real(const std::vector<Request>& requests, const SchedulerConfig& config,
                   const RealEngine& engine) {
  if (!engine.model || !engine.tokenizer) throw Error("run_real: model and tokenizer are required");
  const ModelConfig& c = engine.model->config();
  std::vector<Sequence> seqs;
  seqs.reserve(requests.size());  // the scheduler keeps pointers: no reallocation after this
  for (const Request& r : requests) {
    seqs.push_back(make_sequence(r, engine.tokenizer, c.vocab_size, c.seq_len));
    seqs.back().sampler.emplace(r.sampling, c.vocab_size);
  }
  ForwardPass pass(*engine.model);
  std::vector<BatchEntry> entries;
  std::vector<float> logits;
  RealClock clock;
  auto run_step = [&](const StepPlan& plan) {
    entries.clear();
    for (const ScheduledChunk& ch : plan.chunks) {
      Sequence& s = *ch.seq;
      // Sized for this sequence alone: every position it will ever forward.
      if (!s.cache) s.cache.emplace(c, s.prompt_tokens + s.max_new_tokens - 1, engine.kv_type);
      entries.push_back({std::span<const int>(s.tokens.data() + ch.start, ch.count), ch.start,
                         &*s.cache});
    }
    pass.forward_batch(entries, logits);
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
      const ScheduledChunk& ch = plan.chunks[i];
      if (!ch.samples) continue;  // a prompt chunk that is not the last: its logits are unused
      const std::span<const float> row(logits.data() + i * c.vocab_size, c.vocab_size);
      Sequence& s = *ch.seq;
      s.tokens.push_back(s.sampler->sample(row, s.tokens));
    }
    return clock.now();
  };
  EngineRun run = serve(seqs, config, clock, run_step, "real");
  for (RequestResult& r : run.requests)
    r.text = streamed_text(*engine.tokenizer, r.tokens, static_cast<int>(r.prompt_tokens.size()));
  return run;
}

EngineRun run_sim(const std::vector<Request>& requests, const SchedulerConfig& config,
                  const SimEngine& engine) {
  std::vector<Sequence> seqs;
  seqs.reserve(requests.size());
  for (const Request& r : requests)
    seqs.push_back(make_sequence(r, engine.tokenizer, engine.config.vocab_size,
                                 engine.config.seq_len));
  SimClock clock;
  std::vector<StepChunk> chunks;
  auto run_step = [&](const StepPlan& plan) {
    chunks.clear();
    for (const ScheduledChunk& ch : plan.chunks) {
      chunks.push_back({ch.seq->request.id, ch.seq->slot, ch.start, ch.count, ch.prefill,
                        ch.samples});
      if (ch.samples) ch.seq->tokens.push_back(kUnkToken);  // a placeholder: no model runs
    }
    clock.advance(step_time_seconds(engine.config, engine.hardware, step_shape(chunks),
                                    engine.cost));
    return clock.now();
  };
  return serve(seqs, config, clock, run_step, "sim");
}

ServingMetrics run_serving_metrics(const EngineRun& run, const Slo& slo) {
  std::vector<RequestMetrics> metrics;
  for (const RequestResult& r : run.requests) metrics.push_back(r.metrics);
  return serving_metrics(metrics, run.metrics.duration, slo);
}

DecodeThroughput measure_decode_throughput(const Model& model, int batch, int context,
                                           int steps) {
  const ModelConfig& c = model.config();
  if (batch < 1 || context < 1 || steps < 1)
    throw Error("measure_decode_throughput: batch, context and steps must be >= 1");
  // In 64 bits: context + steps must not wrap around before it is compared.
  const std::int64_t needed = std::int64_t{context} + steps + 1;
  if (needed > c.seq_len) {
    throw Error(fmt::format("decode sweep: context {} + {} steps does not fit the model's {} "
                            "positions", context, steps, c.seq_len));
  }
  const int capacity = static_cast<int>(needed);
  ForwardPass pass(model);
  std::vector<KVCache> caches;
  caches.reserve(static_cast<std::size_t>(batch));
  std::vector<float> logits;
  for (int b = 0; b < batch; ++b) {
    caches.emplace_back(c, capacity);
    const std::vector<int> prompt = synthetic_prompt(b, context, c.vocab_size);
    pass.forward(prompt, 0, caches.back(), LogitsMode::last, logits);
  }
  // Every sequence feeds a fixed token: the time of a step does not depend on which.
  const std::vector<int> token(static_cast<std::size_t>(batch), 3);
  std::vector<BatchEntry> entries(static_cast<std::size_t>(batch));
  auto decode_step = [&] {
    for (int b = 0; b < batch; ++b)
      entries[b] = {std::span<const int>(&token[b], 1), caches[b].length(), &caches[b]};
    pass.forward_batch(entries, logits);
  };
  decode_step();  // warm-up: buffers grow, caches warm
  const double t0 = now_seconds();
  for (int i = 0; i < steps; ++i) decode_step();
  DecodeThroughput d;
  d.batch = batch;
  d.step_seconds = (now_seconds() - t0) / steps;
  d.tokens_per_second = batch / d.step_seconds;
  d.tokens_per_second_per_sequence = 1.0 / d.step_seconds;
  return d;
}

}  // namespace inferlab
