// Exercise 02, the checked answer: latency metrics from per-token timestamps.

#include <algorithm>
#include <cmath>
#include <string>

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex02 {

namespace {

/// Throws inferlab::Error unless the timeline has a token and its times never go backwards.
void check_timeline(const TokenTimeline& timeline) {
  const auto& t = timeline.token_times;
  if (t.empty()) throw Error("latency metrics: the request has no output token");
  if (t.front() < timeline.arrival) {
    throw Error("latency metrics: the first token (t = " + std::to_string(t.front()) +
                " s) precedes the arrival (t = " + std::to_string(timeline.arrival) + " s)");
  }
  for (std::size_t i = 1; i < t.size(); ++i) {
    if (t[i] < t[i - 1]) {
      throw Error("latency metrics: token " + std::to_string(i) + " (t = " + std::to_string(t[i]) +
                  " s) is earlier than token " + std::to_string(i - 1));
    }
  }
}

}  // namespace

double time_to_first_token(const TokenTimeline& timeline) {
  check_timeline(timeline);
  return timeline.token_times.front() - timeline.arrival;
}

double end_to_end_latency(const TokenTimeline& timeline) {
  check_timeline(timeline);
  return timeline.token_times.back() - timeline.arrival;
}

double time_per_output_token(const TokenTimeline& timeline) {
  check_timeline(timeline);
  const auto n = timeline.token_times.size();
  if (n == 1) return 0.0;  // one token: there is no gap to average
  const double e2e = timeline.token_times.back() - timeline.arrival;
  const double ttft = timeline.token_times.front() - timeline.arrival;
  // The same as the mean ITL: the gaps add up to last - first = E2E - TTFT.
  return (e2e - ttft) / static_cast<double>(n - 1);
}

std::vector<double> inter_token_latencies(const TokenTimeline& timeline) {
  check_timeline(timeline);
  const auto& t = timeline.token_times;
  std::vector<double> itl;
  itl.reserve(t.size() - 1);
  for (std::size_t i = 1; i < t.size(); ++i) itl.push_back(t[i] - t[i - 1]);
  return itl;
}

double percentile(std::span<const double> values, double p) {
  if (values.empty()) throw Error("percentile: no values");
  if (!(p >= 0.0 && p <= 100.0)) {
    throw Error("percentile: p = " + std::to_string(p) + " is outside [0, 100]");
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());

  // numpy's 'linear' method: a fractional rank between the two closest order statistics.
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  const double weight = rank - static_cast<double>(lo);
  return sorted[lo] + weight * (sorted[hi] - sorted[lo]);
}

LatencyReport latency_report(const TokenTimeline& timeline) {
  LatencyReport report;
  report.output_tokens = static_cast<int>(timeline.token_times.size());
  report.ttft = time_to_first_token(timeline);
  report.tpot = time_per_output_token(timeline);
  report.e2e = end_to_end_latency(timeline);
  report.itl = inter_token_latencies(timeline);
  if (!report.itl.empty()) {
    report.itl_p50 = percentile(report.itl, 50.0);
    report.itl_p90 = percentile(report.itl, 90.0);
    report.itl_p99 = percentile(report.itl, 99.0);
  }
  return report;
}

}  // namespace inferlab::ex02
