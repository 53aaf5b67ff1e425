// The standard model of the speed-up, and a measured run against it.
#include "inferlab/analysis/speculative_speedup.hpp"

#include <cmath>

#include "inferlab/base/error.hpp"

namespace inferlab {

std::vector<int> k_values(int k, bool sweep) {
  if (!sweep) return {k};
  std::vector<int> ks;
  for (int i = 1; i <= kSweepMaxK; ++i) ks.push_back(i);
  return ks;
}

double expected_tokens_per_round(double alpha, int k) {
  if (alpha >= 1.0) return k + 1.0;
  return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, int k, double c, double v) {
  return expected_tokens_per_round(alpha, k) / (k * c + v);
}

SpeedupReport speedup_report(const SpecGeneration& spec, const SpecGeneration& plain, int k) {
  if (spec.generated <= 0 || plain.generated <= 0 || !(spec.decode_seconds > 0.0) ||
      !(plain.decode_seconds > 0.0) || spec.stats.rounds <= 0) {
    throw Error("speed-up report: a run generated nothing");
  }
  SpeedupReport r;
  r.tokens_per_s = spec.generated / spec.decode_seconds;
  r.plain_tokens_per_s = plain.generated / plain.decode_seconds;
  r.speedup_measured = r.tokens_per_s / r.plain_tokens_per_s;
  const double step = plain.decode_seconds / plain.generated;  // one plain decode step
  const double rounds = double(spec.stats.rounds);
  r.draft_cost_ratio = spec.stats.draft_seconds / (rounds * k) / step;
  r.verify_cost_ratio = spec.stats.verify_seconds / rounds / step;
  const double alpha = spec.stats.acceptance_rate();
  r.expected_tokens_per_round = expected_tokens_per_round(alpha, k);
  r.speedup_predicted = predicted_speedup(alpha, k, r.draft_cost_ratio, r.verify_cost_ratio);
  r.speedup_predicted_ideal = predicted_speedup(alpha, k, r.draft_cost_ratio, 1.0);
  r.target_forwards_per_token = rounds / spec.generated;
  return r;
}

}  // namespace inferlab
