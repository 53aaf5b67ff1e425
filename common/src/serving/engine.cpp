// The serving loop with its two clocks: the real model, and the roofline simulator.
#include "inferlab/serving/engine.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/base/units.hpp"

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

// Every request must fit the memory on its own, or it could never run: said before the run.
// A later turn of a chat resends the whole conversation, so it is checked in its worst case:
// its parent's worst-case prompt, everything the parent may generate, then its own message.
void check_fits(const std::vector<Sequence>& seqs, const KVManager& kv, int context) {
  if (kv.capacity_tokens() == 0) return;
  const int block_size = kv.block_size();
  std::vector<const Sequence*> by_id;
  for (const Sequence& s : seqs)
    if (s.branch == 0) by_id.push_back(&s);
  std::stable_sort(by_id.begin(), by_id.end(), [](const Sequence* a, const Sequence* b) {
    return a->request.id < b->request.id;
  });
  struct Worst {
    long prompt, max_new;
  };
  std::map<int, Worst> worst;  // Request::id -> its largest shape
  for (const Sequence* s : by_id) {
    const Request& r = s->request;
    Worst w{s->prompt_tokens, s->max_new_tokens};
    const auto parent = r.parent >= 0 ? worst.find(r.parent) : worst.end();
    if (parent != worst.end()) {
      w.prompt = parent->second.prompt + parent->second.max_new + (s->prompt_tokens - 1);
      w.max_new = std::min<long>(r.max_tokens, context - w.prompt + 1);
    }
    worst[r.id] = w;
    // Beyond the context the turn is refused when it arrives (continue_conversation).
    if (w.prompt > context) continue;
    const std::size_t positions = kv.positions_to_finish(
        static_cast<int>(w.prompt), static_cast<int>(w.max_new), 1 + int(s->forks.size()));
    if (positions <= kv.capacity_tokens()) continue;
    const std::string what =
        parent == worst.end()
            ? fmt::format("request {}", r.id)
            : fmt::format("request {} (continuing request {}: a conversation of up to {} tokens)",
                          r.id, r.parent, w.prompt);
    if (block_size > 0) {
      throw ParameterError("kv_memory",
                           fmt::format("too small: {} needs {} blocks of {} positions ({} "
                                       "tokens); the pool has {} (raise it or lower max_tokens)",
                                       what, ceil_div(positions, std::size_t(block_size)),
                                       block_size, positions, kv.capacity_tokens() / block_size));
    }
    throw ParameterError("kv_memory",
                         fmt::format("too small: {} needs {} KV positions; the budget "
                                     "holds {} (raise it or lower max_tokens)",
                                     what, positions, kv.capacity_tokens()));
  }
}

// When each sequence enters the scheduler. Every request's first sequence arrives at its
// Request::arrival (earliest first, ties in request order); a later turn of a chat arrives
// think_time after the turn it continues finishes, carrying the whole conversation. Parallel
// branches are not queued: their parent forks them.
class ArrivalQueue {
 public:
  // @throws Error if a request continues one that is not an earlier request.
  ArrivalQueue(std::vector<Sequence>& seqs, int context) : seqs_(seqs), context_(context) {
    std::map<int, std::size_t> by_id;  // Request::id -> its first sequence
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (seqs[i].branch != 0) continue;
      by_id[seqs[i].request.id] = i;
      order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return seqs[a].request.arrival < seqs[b].request.arrival;
    });
    for (std::size_t i : order) {
      const Request& r = seqs[i].request;
      if (r.parent < 0) {
        queue_.emplace(r.arrival, i);
        continue;
      }
      if (r.parent >= r.id || !by_id.count(r.parent)) {
        throw Error(fmt::format("request {} continues request {}, which is not an earlier request",
                                r.id, r.parent));
      }
      next_turns_[r.parent].push_back(i);
    }
  }

  bool empty() const { return queue_.empty(); }
  double next_arrival() const { return queue_.begin()->first; }

  // Hands @p scheduler every sequence that has arrived by @p now, earliest first.
  void release(double now, Scheduler& scheduler) {
    while (!queue_.empty() && queue_.begin()->first <= now) {
      scheduler.add(seqs_[queue_.begin()->second]);
      queue_.erase(queue_.begin());
    }
  }

  // After a step that ended at @p end: the turns continuing a chat turn that finished in it.
  void step_finished(const StepPlan& plan, double end) {
    for (const ScheduledChunk& c : plan.chunks) {
      const Sequence& done = *c.seq;
      if (!done.finished() || done.branch != 0) continue;
      const auto it = next_turns_.find(done.request.id);
      if (it == next_turns_.end()) continue;
      for (std::size_t i : it->second) {
        Sequence& turn = seqs_[i];
        continue_conversation(turn, done, context_);
        turn.request.arrival = std::max(turn.request.arrival, end + turn.request.think_time);
        turn.timeline.arrival = turn.request.arrival;
        queue_.emplace(turn.request.arrival, i);
      }
      next_turns_.erase(it);
    }
  }

 private:
  std::vector<Sequence>& seqs_;
  int context_;
  std::multimap<double, std::size_t> queue_;            // arrival time -> sequence
  std::map<int, std::vector<std::size_t>> next_turns_;  // Request::id -> turns continuing it
};

// The loop both engines share, one step at a time as nano-vllm's LLMEngine runs it: schedule,
// run, postprocess. It records every step and, at the end, collects what each request got.
class EngineLoop {
 public:
  EngineLoop(std::vector<Sequence>& seqs, const SchedulerConfig& config, KVManager& kv, int context)
      : seqs_(seqs), kv_(kv), scheduler_(config, &kv), arrivals_(seqs, context) {
    run_.scheduler = config;
  }

  // Anything left: sequences still to arrive, waiting, swapped or running.
  bool has_work() const { return !arrivals_.empty() || scheduler_.has_work(); }

  // One step starting at @p now: `run_step(plan)` executes the plan (appending one token to
  // every chunk that samples) and returns the time it ended. When nothing can run yet, no step
  // is taken and the result is the time of the next arrival, to idle until.
  template <class RunStep>
  std::optional<double> step(double now, RunStep& run_step) {
    arrivals_.release(now, scheduler_);
    const StepPlan plan = scheduler_.schedule();
    if (plan.empty()) {
      if (arrivals_.empty()) throw Error("engine: work left but the scheduler planned nothing");
      return arrivals_.next_arrival();
    }
    EngineStep step = begin_step(plan, now);
    step.end = run_step(plan);
    end_step(plan, step);
    return std::nullopt;
  }

  // What each request got, the steps and the aggregate numbers, on the clock @p clock_name.
  EngineRun result(const char* clock_name);

 private:
  EngineStep begin_step(const StepPlan& plan, double now);
  void end_step(const StepPlan& plan, EngineStep& step);
  void keep_peak_tables(const EngineStep& step);

  std::vector<Sequence>& seqs_;
  KVManager& kv_;
  Scheduler scheduler_;
  ArrivalQueue arrivals_;
  EngineRun run_;
};

// The step as scheduled: its tokens and the batch around it.
EngineStep EngineLoop::begin_step(const StepPlan& plan, double now) {
  EngineStep step;
  step.start = now;
  step.decode_tokens = plan.decode_tokens;
  step.prefill_tokens = plan.prefill_tokens;
  step.running = static_cast<int>(scheduler_.running().size());
  step.active = static_cast<int>(plan.chunks.size());
  step.waiting = static_cast<int>(scheduler_.waiting().size() + scheduler_.swapped().size());
  for (const ScheduledChunk& c : plan.chunks) {
    if (c.seq->admitted_at < 0) c.seq->admitted_at = now;
  }
  return step;
}

// The step as run: memory during it, what each chunk forwarded and when its token came, then
// postprocess (the finish rule, memory released) and the chat turns it lets arrive.
void EngineLoop::end_step(const StepPlan& plan, EngineStep& step) {
  // Memory during the step: what was reserved for it, and what it had written by its end.
  step.kv_used = kv_.used_tokens();
  step.kv_reserved = kv_.reserved_tokens();
  step.kv_logical = kv_.logical_tokens();
  keep_peak_tables(step);  // before postprocess frees the sequences that finished
  for (const ScheduledChunk& c : plan.chunks) {
    Sequence& s = *c.seq;
    step.chunks.push_back({s.request.id, s.slot, c.start, c.count, c.prefill, c.samples});
    if (c.samples) s.timeline.token_times.push_back(step.end);
  }
  scheduler_.postprocess(plan);
  if (const PrefixCache* cache = kv_.prefix_cache()) {
    step.cached_blocks = cache->cached_blocks();
    run_.peak_cached_blocks = std::max(run_.peak_cached_blocks, step.cached_blocks);
  }
  arrivals_.step_finished(plan, step.end);
  run_.steps.push_back(std::move(step));
}

// Paged memory: the running sequences' block tables at the step where they were most scattered
// over the pool (the first such step; at equal scatter, the one with the most blocks). At the
// start every table is a run of consecutive blocks; frees and preemptions break them up, which
// is the indirection the block table exists for.
void EngineLoop::keep_peak_tables(const EngineStep& step) {
  if (kv_.block_size() == 0) return;
  int scattered = 0;
  std::size_t blocks = 0;
  for (const Sequence* s : scheduler_.running()) {
    if (!s->kv) continue;
    const std::vector<int>& t = s->kv->blocks();
    for (std::size_t c = 1; c < t.size(); ++c) scattered += t[c] != t[c - 1] + 1 ? 1 : 0;
    blocks += t.size();
  }
  const BlockTableSnapshot& best = run_.peak_tables;
  if (!run_.steps.empty() && std::pair(scattered, blocks) <= std::pair(best.scattered, best.blocks))
    return;
  run_.peak_tables = {step.start, {}, {}, scattered, blocks};
  for (const Sequence* s : scheduler_.running()) {
    if (!s->kv) continue;
    run_.peak_tables.requests.push_back(s->request.id);
    run_.peak_tables.tables.push_back(s->kv->blocks());
  }
}

EngineRun EngineLoop::result(const char* clock_name) {
  EngineRun run = std::move(run_);
  run.clock = clock_name;
  std::vector<RequestMetrics> metrics;
  for (Sequence& s : seqs_) {
    RequestResult r;
    r.request = s.request;
    r.prompt_tokens.assign(s.tokens.begin(), s.tokens.begin() + s.prompt_tokens);
    r.tokens = s.tokens;
    r.slot = s.slot;
    r.admitted_at = s.admitted_at;
    r.stop_reason = s.stop_reason;
    r.branch = s.branch;
    r.preemptions = s.preemptions;
    r.cached_tokens = s.cached_tokens;
    r.timeline = s.timeline;
    r.metrics = request_metrics(s.timeline);
    metrics.push_back(r.metrics);
    run.requests.push_back(std::move(r));
  }
  std::sort(run.requests.begin(), run.requests.end(),
            [](const RequestResult& a, const RequestResult& b) {
              return std::pair(a.request.id, a.branch) < std::pair(b.request.id, b.branch);
            });
  double last = 0.0;
  for (const RequestResult& r : run.requests) last = std::max(last, r.timeline.token_times.back());
  run.metrics = serving_metrics(metrics, last > 0.0 ? last : 1e-9);
  double occupied = 0.0, active = 0.0;
  for (const EngineStep& s : run.steps) {
    occupied += s.running;
    active += s.active;
  }
  const double denom = static_cast<double>(run.steps.size()) * run.scheduler.max_seqs;
  run.mean_occupancy = run.steps.empty() ? 0.0 : occupied / denom;
  run.mean_slot_utilisation = run.steps.empty() ? 0.0 : active / denom;
  run.allocator = kv_.name();
  run.kv_capacity_tokens = kv_.capacity_tokens();
  run.kv_bytes_per_token = kv_.bytes_per_token();
  run.block_size = kv_.block_size();
  run.preemptions = scheduler_.preemptions();
  run.swapped_bytes = kv_.swapped_bytes();
  if (const PrefixCache* cache = kv_.prefix_cache()) {
    run.prefix_cache = cache->name();
    run.evicted_blocks = cache->evicted_blocks();
    run.trie = cache->view();
  }
  return run;
}

// Serves @p seqs to the end on @p clock: a step whenever there is one to run, else idle until
// the next arrival.
template <class Clock, class RunStep>
EngineRun serve(std::vector<Sequence>& seqs, const SchedulerConfig& config, KVManager& kv,
                int context, Clock& clock, RunStep&& run_step, const char* clock_name) {
  check_fits(seqs, kv, context);
  EngineLoop loop(seqs, config, kv, context);
  while (loop.has_work()) {
    if (const std::optional<double> idle_until = loop.step(clock.now(), run_step))
      clock.wait_until(*idle_until);
  }
  return loop.result(clock_name);
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

const char* allocator_name(Allocator allocator) {
  return allocator == Allocator::paged ? "paged" : "contiguous";
}

Allocator parse_allocator(const std::string& name) {
  if (name == "contiguous") return Allocator::contiguous;
  if (name == "paged") return Allocator::paged;
  throw Error(fmt::format("unknown allocator '{}' (expected paged or contiguous)", name));
}

std::unique_ptr<KVManager> make_kv_manager(const MemoryConfig& memory, PoolFactory pools,
                                           const ModelConfig& config, DType type) {
  const std::size_t per_token = kv_storage_bytes_per_token(config, type);
  if (memory.allocator == Allocator::contiguous) {
    if (memory.prefix_cache != PrefixCacheKind::off)
      throw Error("a prefix cache needs paged KV memory (it shares blocks between requests)");
    return std::make_unique<ContiguousKVManager>(std::move(pools), config, type,
                                                 memory.budget_bytes / per_token, memory.reserve);
  }
  if (memory.block_size < 1 || memory.block_size > config.seq_len) {
    throw ParameterError("block_size", fmt::format("{0}: block size {0} outside [1, context = {1}]",
                                                   memory.block_size, config.seq_len));
  }
  const std::size_t per_block = per_token * std::size_t(memory.block_size);
  if (memory.budget_bytes < per_block) {
    throw ParameterError("kv_memory",
                         fmt::format("too small: a KV budget of {} bytes is less than one block "
                                     "({} positions x {} bytes = {} bytes)",
                                     memory.budget_bytes, memory.block_size, per_token, per_block));
  }
  const std::size_t blocks = memory.budget_bytes / per_block;
  if (blocks > std::size_t(1) << 24)
    throw ParameterError(
        "kv_memory", fmt::format("too large: a KV budget of {} blocks is more than 2^24", blocks));
  return std::make_unique<PagedKVManager>(std::move(pools), static_cast<int>(blocks),
                                          memory.block_size, memory.swap_bytes,
                                          memory.prefix_cache);
}

namespace {
// Every request's sequence, followed by its parallel branches (Request::n), each branch listed
// in its parent's forks. The scheduler keeps pointers: the vector never reallocates after this.
std::vector<Sequence> make_sequences(const std::vector<Request>& requests, const Tokenizer* tok,
                                     const ModelConfig& c, bool samplers) {
  std::size_t total = 0;
  for (const Request& r : requests) total += std::size_t(std::max(r.n, 1));
  std::vector<Sequence> seqs;
  seqs.reserve(total);
  for (const Request& r : requests) {
    seqs.push_back(make_sequence(r, tok, c.vocab_size, c.seq_len));
    const std::size_t parent = seqs.size() - 1;
    for (int b = 1; b < r.n; ++b) seqs.push_back(make_branch(seqs[parent], b));
    for (int b = 1; b < r.n; ++b) seqs[parent].forks.push_back(&seqs[parent + std::size_t(b)]);
  }
  if (samplers)
    for (Sequence& s : seqs) s.sampler.emplace(s.request.sampling, c.vocab_size);
  return seqs;
}
}  // namespace

void check_workload_fits(const std::vector<Request>& requests, const MemoryConfig& memory,
                         const ModelConfig& config, DType type, const Tokenizer* tokenizer) {
  std::vector<Sequence> seqs = make_sequences(requests, tokenizer, config, /*samplers=*/false);
  const std::unique_ptr<KVManager> kv =
      make_kv_manager(memory, virtual_pools(config, type), config, type);
  check_fits(seqs, *kv, config.seq_len);
}

EngineRun run_real(const std::vector<Request>& requests, const SchedulerConfig& config,
                   const RealEngine& engine) {
  if (!engine.model || !engine.tokenizer) throw Error("run_real: model and tokenizer are required");
  const ModelConfig& c = engine.model->config();
  std::vector<Sequence> seqs = make_sequences(requests, engine.tokenizer, c, /*samplers=*/true);
  std::unique_ptr<ModelRunner> runner = make_runner(*engine.model, engine.device);
  std::unique_ptr<KVManager> kv =
      make_kv_manager(engine.memory, runner_pools(*runner, engine.kv_type), c, engine.kv_type);
  std::vector<BatchEntry> entries;
  std::vector<float> logits;
  std::vector<int> chosen;  // step_greedy's tokens, one per chunk
  RealClock clock;
  auto run_step = [&](const StepPlan& plan) {
    entries.clear();
    bool argmax_only = true;  // every chunk that samples wants the plain argmax
    for (const ScheduledChunk& ch : plan.chunks) {
      Sequence& s = *ch.seq;
      entries.push_back(
          {std::span<const int>(s.tokens.data() + ch.start, ch.count), ch.start, s.kv.get()});
      if (ch.samples && !s.request.sampling.argmax_only()) argmax_only = false;
    }
    if (argmax_only) {
      // The runner takes the argmax where the logits are: on a GPU only the ids come back.
      runner->step_greedy(entries, chosen);
      for (std::size_t i = 0; i < plan.chunks.size(); ++i)
        if (plan.chunks[i].samples) plan.chunks[i].seq->tokens.push_back(chosen[i]);
      return clock.now();
    }
    runner->step(entries, LogitsMode::last, logits);
    // Sampling runs on the host, per request, with the request's own parameters and RNG.
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
      const ScheduledChunk& ch = plan.chunks[i];
      if (!ch.samples) continue;  // a prompt chunk that is not the last: its logits are unused
      const std::span<const float> row(logits.data() + i * c.vocab_size, c.vocab_size);
      Sequence& s = *ch.seq;
      s.tokens.push_back(s.sampler->sample(row, s.tokens));
    }
    return clock.now();
  };
  EngineRun run = serve(seqs, config, *kv, c.seq_len, clock, run_step, "real");
  for (RequestResult& r : run.requests)
    r.text = stream_text(*engine.tokenizer, r.tokens, r.prompt_tokens.size());
  return run;
}

EngineRun run_sim(const std::vector<Request>& requests, const SchedulerConfig& config,
                  const SimEngine& engine) {
  std::vector<Sequence> seqs =
      make_sequences(requests, engine.tokenizer, engine.config, /*samplers=*/false);
  // Its tokens are placeholders, not a model's choices: none of them is an end of text (the
  // simulated clients stop at Request::output_len).
  for (Sequence& s : seqs) s.end_tokens.clear();
  std::unique_ptr<KVManager> kv = make_kv_manager(
      engine.memory, virtual_pools(engine.config, engine.kv_type), engine.config, engine.kv_type);
  SimClock clock;
  std::vector<StepChunk> chunks;
  auto run_step = [&](const StepPlan& plan) {
    chunks.clear();
    for (const ScheduledChunk& ch : plan.chunks) {
      chunks.push_back(
          {ch.seq->request.id, ch.seq->slot, ch.start, ch.count, ch.prefill, ch.samples});
      if (ch.samples) ch.seq->tokens.push_back(kUnkToken);          // a placeholder: no model runs
      if (ch.seq->kv) ch.seq->kv->set_length(ch.start + ch.count);  // as a forward would
    }
    clock.advance(
        step_time_seconds(engine.config, engine.hardware, step_shape(chunks), engine.cost));
    return clock.now();
  };
  return serve(seqs, config, *kv, engine.config.seq_len, clock, run_step, "sim");
}

EngineRun ServingEngine::serve(const std::vector<Request>& requests, const SchedulerConfig& config,
                               const MemoryConfig& memory) const {
  if (sim) {
    SimEngine engine = *sim;
    engine.memory = memory;
    return run_sim(requests, config, engine);
  }
  RealEngine engine = real;
  engine.memory = memory;
  return run_real(requests, config, engine);
}

ServingMetrics run_serving_metrics(const EngineRun& run, const Slo& slo) {
  std::vector<RequestMetrics> metrics;
  for (const RequestResult& r : run.requests) metrics.push_back(r.metrics);
  return serving_metrics(metrics, run.metrics.duration, slo);
}

}  // namespace inferlab
