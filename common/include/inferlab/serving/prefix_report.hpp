#pragma once
/// @file prefix_report.hpp
/// @brief Chapter 06's measurements of a prefix cache: what it saved over one run, the timing
/// side channel that a tenant salt closes, the worked example on the roofline (a 2,000-token
/// system prompt of Llama-3-70B on 4x A100), and the whole study: one workload served with
/// each cache, side by side.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "inferlab/serving/engine.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/serving/prefix_cache.hpp"
#include "inferlab/analysis/roofline.hpp"

namespace inferlab {

/// @brief What a prefix cache did over one run (names as chapter 06's JSON).
struct PrefixSummary {
  std::string cache;  ///< "radix", "hash" or "off"
  int requests = 0;   ///< requests served (parallel branches not counted)
  /// Prompt tokens served from the cache over all prompt tokens (first admissions).
  double token_hit_rate = 0.0;
  /// Requests that reused at least one block's worth of prompt (block_size tokens) over all:
  /// a match of BOS and a common first word is not counted as a hit.
  double request_hit_rate = 0.0;
  long long prompt_tokens = 0;            ///< prompt tokens over all requests, BOS included
  long long prefill_tokens_computed = 0;  ///< prompt positions the steps forwarded (recomputes too)
  long long prefill_tokens_saved = 0;     ///< prompt positions served from the cache
  long long evictions = 0;                ///< blocks the cache gave back to the pool
  double ttft_p50 = 0.0;                  ///< seconds
  double ttft_p99 = 0.0;                  ///< seconds
  double throughput_tokens_per_s = 0.0;   ///< output tokens over the run's duration
  std::size_t cache_bytes = 0;            ///< the most KV bytes the cache held at once
  int steps = 0;                          ///< engine steps
  double mean_running = 0.0;              ///< sequences running per step, on average
  int preemptions = 0;                    ///< sequences preempted (memory ran out)
};

/// @brief The summary of @p run (a paged run; run.prefix_cache names the cache).
PrefixSummary prefix_summary(const EngineRun& run);

/// @brief The side channel: one tenant's TTFT tells whether another tenant sent a prefix.
struct SideChannel {
  double ttft_seen_s = 0.0;    ///< bob's TTFT for the prefix alice sent just before
  double ttft_unseen_s = 0.0;  ///< bob's TTFT for a prefix nobody sent, as long
  /// @brief How much faster the seen prefix answers: ttft_unseen / ttft_seen (1: no signal).
  double ratio() const { return ttft_unseen_s / ttft_seen_s; }
};

/// @brief Alice sends a prompt of @p prefix_tokens tokens; later bob sends the same prefix,
/// then an unseen one of equal length (each with its own short question). @p rounds such
/// triples (new prefixes each round) arrive @p spacing_s apart, far enough to run alone, on
/// the engine @p serve runs with a prefix cache; the TTFTs are medians over the rounds.
/// @param serve runs the requests on an engine with a prefix cache
/// @param prefix_tokens length of the probed prefix (>= 1)
/// @param spacing_s seconds between arrivals
/// @param salted give each request its tenant (the cache salts entries by it), or none
/// @param rounds triples of requests (>= 1)
/// @throws inferlab::Error if prefix_tokens or rounds < 1.
SideChannel measure_side_channel(const std::function<EngineRun(const std::vector<Request>&)>& serve,
                                 int prefix_tokens, double spacing_s, bool salted, int rounds = 5);

/// @brief What a prefix cache saves when every request repeats the same system prompt.
struct PrefillSaving {
  double prefill_seconds = 0.0;  ///< one prefill of the prefix on the roofline (wall time)
  int gpus = 1;                  ///< GPUs busy for those seconds (the model is split over them)
  double gpu_seconds_saved_per_second = 0.0;  ///< prefill_seconds * gpus * rate
  double rate = 0.0;                          ///< requests per second
};
/// @brief The prefill of @p prefix_tokens tokens of @p config on @p hardware (step_time_seconds
/// of one prefill chunk) and what skipping it saves at @p rate requests per second.
/// @param config the model
/// @param hardware the machine the prefill runs on, as one device (a group of @p gpus GPUs
///        modelled as one with their summed FLOP/s and bandwidth)
/// @param cost the roofline's formats and utilisations
/// @param prefix_tokens the prompt tokens the cache saves
/// @param rate requests per second
/// @param gpus GPUs that @p hardware stands for: each is busy for the whole prefill, so the
///        GPU-seconds saved are the wall time times @p gpus
/// @return the wall time of one prefill and the GPU-seconds saved per second
PrefillSaving prefill_saving(const ModelConfig& config, const Hardware& hardware,
                             const CostOptions& cost, int prefix_tokens, double rate, int gpus = 1);

/// @brief The worked example: Llama-3-70B on 4x A100 (tensor parallel: 4x the FLOP/s, the
/// bandwidth and the memory of one), a 2,000-token system prompt, 100 requests/s: the wall
/// time of one prefill on the four GPUs, and four times that in GPU-seconds per request.
PrefillSaving worked_example_prefill_saving();

/// @brief Match + insert cost of a prefix cache, per request.
struct CacheOpCost {
  int prompt_tokens = 0;   ///< length of every prompt
  double match_us = 0.0;   ///< one match() of a prompt sharing most of a cached one
  double insert_us = 0.0;  ///< one insert() of it
};
/// @brief Times match and insert on @p kind with prompts of @p prompt_tokens tokens (blocks of
/// @p block_size) that share 3/4 of their tokens with one of 8 cached prompts; median of
/// @p reps rounds of 64 requests.
CacheOpCost measure_cache_ops(PrefixCacheKind kind, int prompt_tokens, int block_size, int reps);

/// @brief An engine that serves requests with a given prefix cache and admission order, the rest
/// of its configuration fixed (run_real() or run_sim() over one MemoryConfig).
using PrefixServe =
    std::function<EngineRun(const std::vector<Request>&, PrefixCacheKind cache, Order order)>;

/// @brief What chapter 06 serves.
struct PrefixStudyPlan {
  std::vector<Request> requests;        ///< the workload
  std::vector<PrefixCacheKind> caches;  ///< served with each of these, in this order
  Order order = Order::fcfs;            ///< admission order of those runs
  /// A simulated clock: the side channel probes a 2,000-token prefix 1 s apart (as long as the
  /// worked example's system prompt) instead of 448 tokens 0.15 s apart on a real model.
  bool simulated = false;
  int context = 0;  ///< the model's context (seq_len): the probe leaves 16 positions of it free
  /// Called with a short line (e.g. "serving with prefix cache radix") before each part.
  std::function<void(const std::string&)> progress;
};

/// @brief Chapter 06's results.
struct PrefixStudy {
  std::vector<EngineRun> runs;           ///< one per plan cache
  std::vector<PrefixSummary> summaries;  ///< runs[i]'s
  bool same_tokens = true;               ///< each request's tokens equal with every cache
  Order order = Order::fcfs;             ///< the plan's order
  /// The other order (longest_prefix after fcfs, else fcfs), which the radix cache, when it is
  /// among the caches, also serves the workload in: cache-aware scheduling.
  Order other = Order::fcfs;
  std::optional<PrefixSummary> other_order;  ///< the radix cache in that order
  int probe_tokens = 0;                      ///< the side channel's prefix
  SideChannel open;                          ///< the side channel without a tenant salt
  SideChannel closed;                        ///< ... and with one
  PrefillSaving worked_example;              ///< worked_example_prefill_saving()
};

/// @brief Serves @p plan.requests with each cache, checks that no cache changed a token, serves
/// them again with the radix cache in the other order, and measures the side channel with the
/// radix cache (unsalted, then salted).
/// @param plan the workload, caches, order and clock
/// @param serve the engine
/// @throws inferlab::Error as @p serve does.
PrefixStudy run_prefix_study(const PrefixStudyPlan& plan, const PrefixServe& serve);

}  // namespace inferlab
