// Speculative decoding on the roofline clock.
#include "inferlab/analysis/speculative_sim.hpp"

#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/analysis/speculative_speedup.hpp"

namespace inferlab {

std::vector<SpecSimPoint> simulate_speculation(const ModelConfig& target, const ModelConfig& draft,
                                               const Hardware& hardware, double alpha, int k,
                                               std::int64_t context, std::span<const int> batches,
                                               const CostOptions& options) {
  if (!(alpha >= 0.0 && alpha <= 1.0)) {
    throw ParameterError("alpha", fmt::format("{}: must be in [0, 1]", alpha));
  }
  if (k < 1) throw ParameterError("k", fmt::format("{}: must be >= 1", k));
  if (context < 0) throw ParameterError("context", fmt::format("{}: must be >= 0", context));
  // A round verifies K + 1 positions after the cached ones: all must be in the target's context.
  const std::int64_t limit = target.seq_len;
  if (context >= limit) {
    throw ParameterError("context", fmt::format("{}: must be below the target's context of {}",
                                                context, limit));
  }
  if (std::int64_t{k} + 1 > limit - context) {
    throw ParameterError("k", fmt::format("{}: a round of K + 1 positions after {} cached ones "
                                          "passes the target's context of {} (at most {})",
                                          k, context, limit, limit - context - 1));
  }
  std::vector<SpecSimPoint> points;
  for (int b : batches) {
    if (b < 1) throw Error(fmt::format("simulated batch {}: must be >= 1", b));
    StepShape plain, drafting, verify;
    for (int s = 0; s < b; ++s) {
      plain.add_decode(context + 1);
      // The draft's K steps read a context that grows by one each; its middle one stands for all.
      drafting.add_decode(context + 1 + k / 2);
      verify.add_prefill(k + 1, context);
    }
    SpecSimPoint p;
    p.batch = b;
    p.plain_step_s = step_time_seconds(target, hardware, plain, options);
    p.draft_step_s = step_time_seconds(draft, hardware, drafting, options);
    p.verify_step_s = step_time_seconds(target, hardware, verify, options);
    p.verify_memory_bound = step_cost(target, hardware, verify, options).memory_bound();
    p.tokens_per_round = expected_tokens_per_round(alpha, k);
    // Plain: one token per sequence per plain step. Speculative: tokens_per_round per round.
    p.speedup = p.tokens_per_round * p.plain_step_s / (k * p.draft_step_s + p.verify_step_s);
    p.tokens_per_s = p.tokens_per_round / (k * p.draft_step_s + p.verify_step_s);
    points.push_back(p);
  }
  return points;
}

int break_even_batch(std::span<const SpecSimPoint> points) {
  for (const SpecSimPoint& p : points) {
    if (p.speedup < 1.0) return p.batch;
  }
  return -1;
}

SpecSimSweep simulate_k_sweep(const ModelConfig& target, const ModelConfig& draft,
                              const Hardware& hardware, double alpha, std::span<const int> ks,
                              std::int64_t context, int max_batch) {
  if (max_batch < 1) throw Error(fmt::format("simulated batch {}: must be >= 1", max_batch));
  SpecSimSweep sweep;
  sweep.alpha = alpha;
  sweep.context = context;
  for (int b = 1; b <= max_batch; b *= 2) sweep.batches.push_back(b);
  const CostOptions cost = cost_options_for(hardware);
  for (int k : ks) {
    SpecSimCurve c;
    c.k = k;
    c.points =
        simulate_speculation(target, draft, hardware, alpha, k, context, sweep.batches, cost);
    c.break_even = break_even_batch(c.points);
    sweep.curves.push_back(std::move(c));
  }
  return sweep;
}

}  // namespace inferlab
