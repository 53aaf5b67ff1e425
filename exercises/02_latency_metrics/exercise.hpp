#pragma once
/// @file exercises/02_latency_metrics/exercise.hpp
/// @brief Exercise 02: the latency numbers of one request, from its timestamps.
///
/// A request arrives at time `arrival` and its N output tokens become available at
/// `token_times[0..N)` (seconds, any common clock, non-decreasing). From those:
///
///   TTFT = token_times[0] - arrival                  queueing + prefill: "how fast it answers"
///   E2E  = token_times[N-1] - arrival                the whole request
///   TPOT = (E2E - TTFT) / (N - 1)                    the mean gap after the first token
///   ITL  = token_times[i] - token_times[i-1], i >= 1 every gap: a distribution, N-1 values
///
/// TPOT is one number per request; ITL keeps every gap, so its tail (p90, p99) shows the stalls
/// that the mean hides.

#include <span>
#include <vector>

namespace inferlab::ex02 {

/// @brief The timestamps of one request, in seconds.
struct TokenTimeline {
  double arrival = 0.0;             ///< when the request arrived
  std::vector<double> token_times;  ///< (N) when each output token became available
};

/// @brief Time to first token, seconds.
/// @throws inferlab::Error if there is no token, a token precedes the arrival, or the token
/// times decrease.
double time_to_first_token(const TokenTimeline& timeline);

/// @brief End-to-end latency (arrival to last token), seconds. @throws like time_to_first_token.
double end_to_end_latency(const TokenTimeline& timeline);

/// @brief Time per output token, (E2E - TTFT) / (N - 1) seconds; 0 when N = 1 (no gap exists).
/// @throws like time_to_first_token.
double time_per_output_token(const TokenTimeline& timeline);

/// @brief The N - 1 inter-token latencies, in token order (empty when N = 1).
/// @throws like time_to_first_token.
std::vector<double> inter_token_latencies(const TokenTimeline& timeline);

/// @brief The p-th percentile of @p values by linear interpolation between the closest ranks
/// (numpy's default, method 'linear'): sort, take rank r = p / 100 * (n - 1), and return
/// sorted[floor r] + (r - floor r) * (sorted[ceil r] - sorted[floor r]).
/// @param values (n) any order; not modified.
/// @param p      in [0, 100].
/// @throws inferlab::Error if @p values is empty or @p p is outside [0, 100].
/// @note O(n log n) for the sort.
double percentile(std::span<const double> values, double p);

/// @brief Everything above for one request.
struct LatencyReport {
  int output_tokens = 0;    ///< N
  double ttft = 0.0;        ///< seconds
  double tpot = 0.0;        ///< seconds
  double e2e = 0.0;         ///< seconds
  std::vector<double> itl;  ///< (N - 1) seconds
  double itl_p50 = 0.0;     ///< seconds; 0 when there is no gap (N = 1)
  double itl_p90 = 0.0;     ///< seconds; 0 when there is no gap
  double itl_p99 = 0.0;     ///< seconds; 0 when there is no gap
};

/// @brief Fills a LatencyReport with the functions above. @throws like time_to_first_token.
LatencyReport latency_report(const TokenTimeline& timeline);

}  // namespace inferlab::ex02
