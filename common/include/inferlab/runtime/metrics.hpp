#pragma once
/// @file metrics.hpp
/// @brief Latency and throughput metrics of LLM serving, with the definitions the chapters use.
///
/// For one request: TTFT = first token time - arrival; E2E = last token time - arrival;
/// TPOT = (E2E - TTFT) / (output tokens - 1); ITL = the gaps between consecutive output tokens.
/// Worked example: 201 tokens, TTFT 0.5 s, E2E 10.5 s -> TPOT = 10 s / 200 = 50 ms.

#include <span>
#include <vector>

namespace inferlab {

/// @brief Timestamps of one request, in seconds on any common clock.
struct RequestTimeline {
  double arrival = 0.0;             ///< when the request arrived
  std::vector<double> token_times;  ///< when each output token became available
};

/// @brief Per-request latency numbers.
struct RequestMetrics {
  int output_tokens = 0;    ///< number of output tokens (token_times.size())
  double ttft = 0.0;        ///< seconds
  double tpot = 0.0;        ///< seconds per output token after the first (0 if only one)
  double e2e = 0.0;         ///< seconds
  std::vector<double> itl;  ///< inter-token latencies, output_tokens - 1 entries
};

/// @brief Computes TTFT, TPOT, ITL and E2E. @throws inferlab::Error if there is no token or
/// the times are not non-decreasing.
RequestMetrics request_metrics(const RequestTimeline& timeline);

/// @brief TPOT from the three summary numbers (the worked example's formula).
double tpot_from(double ttft, double e2e, int output_tokens);

/// @brief Percentile by linear interpolation between closest ranks (p in [0, 100]);
/// @throws inferlab::Error on an empty input or p outside [0, 100].
double percentile(std::span<const double> values, double p);

/// @brief p50/p90/p99 and mean of a sample. Every value is in the unit of the input sample
/// (seconds for the latencies of ServingMetrics); all are 0 when the sample is empty.
struct Summary {
  double mean = 0,  ///< arithmetic mean, in the input's unit
      p50 = 0,      ///< median (percentile(values, 50)), in the input's unit
      p90 = 0,      ///< 90th percentile, in the input's unit
      p99 = 0,      ///< 99th percentile, in the input's unit
      min = 0,      ///< smallest value, in the input's unit
      max = 0;      ///< largest value, in the input's unit
  int count = 0;    ///< number of values summarised (0: empty sample, every field 0)
};
/// @brief Summarises a sample: count, mean, min, max and the p50/p90/p99 percentiles.
/// @param values (N) the sample, any unit; may be empty (then every field is 0, count 0)
/// @return the summary, in the unit of @p values
Summary summarize(std::span<const double> values);

/// @brief A service-level objective: a request is good when both bounds hold.
struct Slo {
  double ttft = 1e30;  ///< seconds
  double tpot = 1e30;  ///< seconds
};

/// @brief Aggregate numbers over many requests served in a window of @p duration seconds.
struct ServingMetrics {
  int requests = 0;                  ///< number of requests summarised
  long long output_tokens = 0;       ///< output tokens summed over all requests
  double duration = 0.0;             ///< seconds
  double throughput_tokens = 0.0;    ///< output tokens / s
  double throughput_requests = 0.0;  ///< requests / s
  double goodput = 0.0;              ///< requests meeting the SLO / s
  double slo_attainment = 0.0;       ///< fraction of requests meeting the SLO
  Summary ttft,                      ///< TTFT over requests, seconds
      tpot,                          ///< TPOT over requests, seconds per output token
      itl,  ///< inter-token latencies pooled over all requests' gaps, seconds
      e2e;  ///< E2E latency over requests, seconds
};
/// @brief Aggregates per-request metrics over a serving window.
/// @param requests (R) per-request metrics, from request_metrics()
/// @param duration length of the window, seconds (finite, > 0)
/// @param slo bounds a request must meet to count as good (default: none)
/// @return counts, throughputs, goodput, SLO attainment and latency summaries
/// @throws inferlab::Error if @p duration is not finite and > 0.
ServingMetrics serving_metrics(std::span<const RequestMetrics> requests, double duration,
                               const Slo& slo = {});

}  // namespace inferlab
