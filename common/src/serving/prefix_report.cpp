// Chapter 06's measurements: a prefix cache's savings, the side channel, the worked example, the
// whole study, and the cost of the cache's own operations.
#include "inferlab/serving/prefix_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/serving/run_compare.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/runtime/metrics.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/base/timer.hpp"

namespace inferlab {

PrefixSummary prefix_summary(const EngineRun& run) {
  PrefixSummary s;
  s.cache = run.prefix_cache;
  long long hits = 0;
  std::vector<double> ttft;
  for (const RequestResult& r : run.requests) {
    if (r.branch != 0) continue;
    ++s.requests;
    s.prompt_tokens += static_cast<long long>(r.prompt_tokens.size());
    s.prefill_tokens_saved += r.cached_tokens;
    hits += run.block_size > 0 && r.cached_tokens >= run.block_size;
    ttft.push_back(r.metrics.ttft);
  }
  for (const EngineStep& step : run.steps) {
    s.prefill_tokens_computed += step.prefill_tokens;
    s.mean_running += step.running;
  }
  s.steps = static_cast<int>(run.steps.size());
  if (s.steps > 0) s.mean_running /= s.steps;
  s.preemptions = run.preemptions;
  s.token_hit_rate = s.prompt_tokens ? double(s.prefill_tokens_saved) / double(s.prompt_tokens) : 0;
  s.request_hit_rate = s.requests ? double(hits) / s.requests : 0.0;
  s.evictions = run.evicted_blocks;
  const Summary t = summarize(ttft);
  s.ttft_p50 = t.p50;
  s.ttft_p99 = t.p99;
  s.throughput_tokens_per_s = run.metrics.throughput_tokens;
  s.cache_bytes =
      std::size_t(run.peak_cached_blocks) * std::size_t(run.block_size) * run.kv_bytes_per_token;
  return s;
}

SideChannel measure_side_channel(const std::function<EngineRun(const std::vector<Request>&)>& serve,
                                 int prefix_tokens, double spacing_s, bool salted, int rounds) {
  if (prefix_tokens < 1) throw Error("side channel: the prefix needs at least one token");
  if (rounds < 1) throw Error("side channel: at least one round");
  Rng rng(2024);
  auto ids = [&](int count) {
    std::vector<int> v;
    for (int i = 0; i < count; ++i) v.push_back(3 + static_cast<int>(rng.next_u32() % 509));
    return v;
  };
  std::vector<Request> reqs;
  for (int round = 0; round < rounds; ++round) {
    const std::vector<int> seen = ids(prefix_tokens), unseen = ids(prefix_tokens);
    const char* tenants[] = {"alice", "bob", "bob"};
    const std::vector<int>* prefixes[] = {&seen, &seen, &unseen};
    for (int i = 0; i < 3; ++i) {
      Request r;
      r.id = static_cast<int>(reqs.size());
      r.arrival = spacing_s * double(r.id);
      r.prompt_ids = *prefixes[i];
      const std::vector<int> question = ids(8);
      r.prompt_ids.insert(r.prompt_ids.end(), question.begin(), question.end());
      r.max_tokens = 4;
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      if (salted) r.tenant = tenants[i];
      reqs.push_back(std::move(r));
    }
  }
  const EngineRun run = serve(reqs);
  std::vector<double> seen_ttft, unseen_ttft;
  for (int round = 0; round < rounds; ++round) {
    seen_ttft.push_back(run.requests[std::size_t(3 * round + 1)].metrics.ttft);
    unseen_ttft.push_back(run.requests[std::size_t(3 * round + 2)].metrics.ttft);
  }
  SideChannel out;
  out.ttft_seen_s = percentile(seen_ttft, 50);
  out.ttft_unseen_s = percentile(unseen_ttft, 50);
  return out;
}

PrefillSaving prefill_saving(const ModelConfig& config, const Hardware& hardware,
                             const CostOptions& cost, int prefix_tokens, double rate, int gpus) {
  StepShape shape;
  shape.add_prefill(prefix_tokens, 0);
  PrefillSaving s;
  s.rate = rate;
  s.prefill_seconds = step_time_seconds(config, hardware, shape, cost);
  s.gpus = gpus;
  s.gpu_seconds_saved_per_second = s.prefill_seconds * gpus * rate;
  return s;
}

PrefillSaving worked_example_prefill_saving() {
  Hardware four = hardware_by_name("a100-sxm");
  four.name = "4x a100-sxm";
  four.peak_flops *= 4;
  four.bandwidth *= 4;
  four.memory_bytes *= 4;
  return prefill_saving(named_config("llama3-70b"), four, cost_options_for(four), 2000, 100.0, 4);
}

PrefixStudy run_prefix_study(const PrefixStudyPlan& plan, const PrefixServe& serve) {
  auto say = [&](const std::string& line) {
    if (plan.progress) plan.progress(line);
  };
  PrefixStudy s;
  s.order = plan.order;
  for (PrefixCacheKind c : plan.caches) {
    say(fmt::format("serving with prefix cache {}", prefix_cache_name(c)));
    s.runs.push_back(serve(plan.requests, c, plan.order));
  }
  for (const EngineRun& r : s.runs) s.summaries.push_back(prefix_summary(r));
  // The agreement check: reusing keys and values never changes a token.
  s.same_tokens = same_tokens(s.runs);

  // Cache-aware scheduling: the radix cache under the other order too.
  s.other = plan.order == Order::fcfs ? Order::longest_prefix : Order::fcfs;
  if (std::find(plan.caches.begin(), plan.caches.end(), PrefixCacheKind::radix) !=
      plan.caches.end()) {
    say(fmt::format("radix cache, {} order", order_name(s.other)));
    s.other_order = prefix_summary(serve(plan.requests, PrefixCacheKind::radix, s.other));
  }

  // The side channel: a prefix about as long as the context allows.
  s.probe_tokens = std::max(1, std::min(plan.simulated ? 2000 : 448, plan.context - 16));
  const double spacing = plan.simulated ? 1.0 : 0.15;
  auto probe_serve = [&](const std::vector<Request>& reqs) {
    return serve(reqs, PrefixCacheKind::radix, Order::fcfs);
  };
  say("side channel probe");
  s.open = measure_side_channel(probe_serve, s.probe_tokens, spacing, /*salted=*/false);
  s.closed = measure_side_channel(probe_serve, s.probe_tokens, spacing, /*salted=*/true);
  s.worked_example = worked_example_prefill_saving();
  return s;
}

CacheOpCost measure_cache_ops(PrefixCacheKind kind, int prompt_tokens, int block_size, int reps) {
  if (kind == PrefixCacheKind::off) throw Error("measure_cache_ops: no cache to time");
  if (prompt_tokens < 4 || block_size < 1 || reps < 1)
    throw Error("measure_cache_ops: prompt_tokens >= 4, block_size >= 1 and reps >= 1");
  constexpr int kBases = 8, kRequests = 64;
  Rng rng(99);
  auto random_ids = [&](std::vector<int>& v, std::size_t from) {
    for (std::size_t i = from; i < v.size(); ++i)
      v[i] = 3 + static_cast<int>(rng.next_u32() % 32000);
  };
  const int blocks_per_prompt = ceil_div(prompt_tokens, block_size);
  std::vector<double> match_us, insert_us;
  for (int rep = 0; rep < reps; ++rep) {
    BlockAllocator alloc((kBases + kRequests) * blocks_per_prompt + 1);
    auto cache = make_prefix_cache(kind, alloc, block_size);
    std::vector<std::vector<int>> bases(kBases, std::vector<int>(std::size_t(prompt_tokens)));
    auto fresh_table = [&](int n) {
      std::vector<int> t;
      for (int i = 0; i < n; ++i) t.push_back(alloc.allocate());
      return t;
    };
    for (auto& b : bases) {
      random_ids(b, 0);
      const std::vector<int> table = fresh_table(blocks_per_prompt);
      cache->insert(b, table, 0);
      for (int id : table) alloc.release(id);
    }
    std::vector<std::vector<int>> queries;
    for (int q = 0; q < kRequests; ++q) {
      std::vector<int> v = bases[std::size_t(q % kBases)];
      random_ids(v, std::size_t(prompt_tokens) * 3 / 4);
      queries.push_back(std::move(v));
    }
    double t_match = 0.0, t_insert = 0.0;
    for (const auto& q : queries) {
      const double t0 = now_seconds();
      const PrefixMatch hit = cache->match(q, prompt_tokens - 1, 0);
      const double t1 = now_seconds();
      // The engine's table: the matched blocks (shared) and fresh ones for the rest.
      std::vector<int> table;
      for (int id : hit.blocks) {
        alloc.retain(id);
        table.push_back(id);
      }
      for (int i = static_cast<int>(table.size()); i < blocks_per_prompt; ++i)
        table.push_back(alloc.allocate());
      const double t2 = now_seconds();
      cache->insert(q, table, 0);
      const double t3 = now_seconds();
      for (int id : table) alloc.release(id);
      t_match += t1 - t0;
      t_insert += t3 - t2;
    }
    match_us.push_back(t_match / kRequests * 1e6);
    insert_us.push_back(t_insert / kRequests * 1e6);
  }
  CacheOpCost c;
  c.prompt_tokens = prompt_tokens;
  c.match_us = percentile(match_us, 50);
  c.insert_us = percentile(insert_us, 50);
  return c;
}

}  // namespace inferlab
