#pragma once
/// @file server_metrics.hpp
/// @brief What a server exposes at `GET /metrics`: gauges of the engine's state, counters of
/// tokens and requests, and latency histograms, written in the Prometheus text format with
/// names in the style of vLLM's (`inferlab:num_requests_running`,
/// `inferlab:time_to_first_token_seconds`).

#include <cstdint>
#include <string>
#include <vector>

namespace inferlab {

/// @brief A cumulative histogram with fixed upper bounds, as Prometheus defines one.
class Histogram {
 public:
  /// @brief A histogram over @p bounds (ascending upper bounds, seconds); +Inf is implied.
  explicit Histogram(std::vector<double> bounds = {});
  /// @brief Counts one observation @p value.
  void observe(double value);
  /// @brief The upper bounds, ascending (without +Inf).
  const std::vector<double>& bounds() const { return bounds_; }
  /// @brief (bounds + 1) observations per bucket, not cumulated; the last one is +Inf.
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }            ///< the sum of all observations
  std::uint64_t count() const { return count_; }  ///< the number of observations

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

/// @brief The latency buckets every histogram of the server uses, seconds (vLLM's TTFT ones).
std::vector<double> latency_buckets();

/// @brief A snapshot of the engine's numbers, taken after a step.
struct ServerMetrics {
  int requests_running = 0;  ///< sequences holding a batch slot
  int requests_waiting = 0;  ///< sequences queued for admission (submitted, not yet admitted)
  long kv_blocks_used = 0;   ///< KV blocks held by live sequences
  long kv_blocks_total = 0;  ///< KV blocks in the pool
  long kv_blocks_cached = 0;  ///< blocks the prefix cache keeps (reusable, evictable)
  std::uint64_t prefix_cache_queries = 0;  ///< prompt tokens looked up in the prefix cache
  std::uint64_t prefix_cache_hits = 0;     ///< of those, tokens found in it (prefill skipped)
  std::uint64_t prompt_tokens = 0;         ///< prompt tokens of every admitted sequence
  std::uint64_t generation_tokens = 0;     ///< tokens generated
  std::uint64_t steps = 0;                 ///< engine steps run
  std::uint64_t finished_stop = 0;         ///< sequences finished by end of text or a stop string
  std::uint64_t finished_length = 0;       ///< sequences finished by max_tokens or the context
  std::uint64_t finished_cancelled = 0;    ///< sequences cancelled (client gone, shutdown)
  std::uint64_t rejected_queue_full = 0;   ///< requests refused because the queue was full
  Histogram ttft{latency_buckets()};          ///< arrival to first token, seconds
  Histogram inter_token{latency_buckets()};   ///< between consecutive tokens, seconds
  Histogram e2e{latency_buckets()};           ///< arrival to last token, seconds
  Histogram queue_time{latency_buckets()};    ///< arrival to admission, seconds
};

/// @brief @p m in the Prometheus text exposition format (version 0.0.4), every name prefixed
/// with `inferlab:` and labelled with @p model_name.
std::string prometheus_text(const ServerMetrics& m, const std::string& model_name);

}  // namespace inferlab
