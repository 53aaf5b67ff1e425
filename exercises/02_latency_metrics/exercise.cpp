// Exercise 02, the learner's file: latency metrics from per-token timestamps.
// The statement is in README.md; the definitions are in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex02_latency_metrics_test
//   ./build-exercises/bin/ex02_latency_metrics_test

#include "exercise.hpp"

#include "inferlab/base/error.hpp"

namespace inferlab::ex02 {

// TODO(exercise): every function below must refuse a bad timeline with an inferlab::Error that
//                 says what is wrong: no token at all, a token before the arrival, or a token
//                 earlier than the one before it.

double time_to_first_token(const TokenTimeline& timeline) {
  // TODO(exercise): first token time minus arrival.
  (void)timeline;
  return 0.0;
}

double end_to_end_latency(const TokenTimeline& timeline) {
  // TODO(exercise): last token time minus arrival.
  (void)timeline;
  return 0.0;
}

double time_per_output_token(const TokenTimeline& timeline) {
  // TODO(exercise): (E2E - TTFT) / (N - 1); with a single token there is no gap: return 0.
  (void)timeline;
  return 0.0;
}

std::vector<double> inter_token_latencies(const TokenTimeline& timeline) {
  // TODO(exercise): the N - 1 differences between consecutive token times, in order.
  (void)timeline;
  return {};
}

double percentile(std::span<const double> values, double p) {
  // TODO(exercise): throw inferlab::Error on an empty input or p outside [0, 100].
  // TODO(exercise): the p-th percentile by linear interpolation between the closest ranks
  //                 (exercise.hpp); the values come in any order and must not change.
  //                 Check: {1, 2, 3, 4} at p 50 is 2.5, at p 90 is 3.7.
  (void)values;
  (void)p;
  return 0.0;
}

// Given: assembles the report from the functions above; nothing to change here.
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
