/// @file metrics.cpp
/// @brief Latency and throughput metrics of LLM serving.
///
/// Per request (N output tokens, times in seconds on one clock):
///   TTFT = t_first - arrival      (queueing + prefill: "how fast does it answer")
///   E2E  = t_last  - arrival
///   ITL  = t_{i+1} - t_i          (a distribution: one value per gap, N - 1 values)
///   TPOT = (E2E - TTFT) / (N - 1) (the mean ITL of this request; 1 / TPOT is the per-user
///                                   streaming speed). E2E = TTFT + (N - 1) * TPOT.
/// Over a window of `duration` seconds:
///   throughput = output tokens / duration  (summed over all users)
///   goodput    = requests meeting the SLO / duration (DistServe's definition), where a request
///                meets the SLO when its TTFT <= slo.ttft and its TPOT <= slo.tpot.
/// Report percentiles, not only means: a good mean TPOT can hide a terrible P99 ITL (a long
/// prefill that stalls every running decode once in a while).

#include "inferlab/runtime/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

RequestMetrics request_metrics(const RequestTimeline& timeline) {
  const std::vector<double>& t = timeline.token_times;
  if (t.empty()) throw Error("metrics: a request needs at least one output token");
  if (!std::isfinite(timeline.arrival)) throw Error("metrics: arrival time is not finite");
  if (!(t[0] >= timeline.arrival)) {
    throw Error(fmt::format("metrics: first token at {} s is before the arrival at {} s", t[0],
                            timeline.arrival));
  }
  RequestMetrics m;
  m.output_tokens = static_cast<int>(t.size());
  m.itl.reserve(t.size() - 1);
  for (std::size_t i = 1; i < t.size(); ++i) {
    // Written as "not >=" so that a NaN time is rejected too.
    if (!(t[i] >= t[i - 1]) || !std::isfinite(t[i])) {
      throw Error(fmt::format("metrics: token {} at {} s comes before token {} at {} s", i, t[i],
                              i - 1, t[i - 1]));
    }
    m.itl.push_back(t[i] - t[i - 1]);
  }
  m.ttft = t.front() - timeline.arrival;
  m.e2e = t.back() - timeline.arrival;
  m.tpot = tpot_from(m.ttft, m.e2e, m.output_tokens);
  return m;
}

double tpot_from(double ttft, double e2e, int output_tokens) {
  if (output_tokens < 1) {
    throw Error(fmt::format("metrics: output_tokens must be >= 1, got {}", output_tokens));
  }
  if (!(e2e >= ttft)) {
    throw Error(fmt::format("metrics: E2E ({} s) is shorter than TTFT ({} s)", e2e, ttft));
  }
  // One token has no gap after the first: TPOT is undefined, reported as 0 by convention.
  if (output_tokens == 1) return 0.0;
  // N tokens have N - 1 gaps after the first; the first one's cost is TTFT, not TPOT.
  return (e2e - ttft) / static_cast<double>(output_tokens - 1);
}

double percentile(std::span<const double> values, double p) {
  if (values.empty()) throw Error("metrics: percentile of an empty sample");
  if (!(p >= 0.0 && p <= 100.0)) {
    throw Error(fmt::format("metrics: percentile p must be in [0, 100], got {}", p));
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  // numpy's default ('linear'): the p-th percentile sits at fractional rank p/100 * (n - 1)
  // of the sorted sample, between the two closest ranks. p = 0 is the min, p = 100 the max.
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

Summary summarize(std::span<const double> values) {
  Summary s;
  // An empty sample (e.g. the ITLs of one-token requests) summarises to zeros with count 0,
  // so a report can still be printed; the count tells the reader there was nothing.
  if (values.empty()) return s;
  s.count = static_cast<int>(values.size());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.count);
  s.p50 = percentile(values, 50.0);
  s.p90 = percentile(values, 90.0);
  s.p99 = percentile(values, 99.0);
  const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
  s.min = *min_it;
  s.max = *max_it;
  return s;
}

ServingMetrics serving_metrics(std::span<const RequestMetrics> requests, double duration,
                               const Slo& slo) {
  if (!(std::isfinite(duration) && duration > 0.0)) {
    throw Error(fmt::format("metrics: duration must be finite and > 0 s, got {}", duration));
  }
  ServingMetrics m;
  m.requests = static_cast<int>(requests.size());
  m.duration = duration;
  std::vector<double> ttft, tpot, itl, e2e;
  int good = 0;
  for (const RequestMetrics& r : requests) {
    m.output_tokens += r.output_tokens;
    ttft.push_back(r.ttft);
    tpot.push_back(r.tpot);
    e2e.push_back(r.e2e);
    // ITLs are pooled: the ITL distribution is over all gaps of all requests, so a request
    // with many tokens weighs more, as it does in the user's experience of stalls.
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    if (r.ttft <= slo.ttft && r.tpot <= slo.tpot) ++good;
  }
  m.throughput_tokens = static_cast<double>(m.output_tokens) / duration;
  m.throughput_requests = static_cast<double>(m.requests) / duration;
  m.goodput = static_cast<double>(good) / duration;
  m.slo_attainment = m.requests > 0 ? static_cast<double>(good) / m.requests : 0.0;
  m.ttft = summarize(ttft);
  m.tpot = summarize(tpot);
  m.itl = summarize(itl);
  m.e2e = summarize(e2e);
  return m;
}

}  // namespace inferlab
