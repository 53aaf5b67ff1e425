#pragma once
/// @file speculative_speedup.hpp
/// @brief The standard model of speculative decoding's speed-up (Leviathan et al. 2023), and a
/// measured run set against it: the expected tokens per round for an acceptance rate alpha,
/// the predicted speed-up for the measured costs of drafting and verifying, and the measured
/// one. speculative_sim.hpp puts the same formula on chapter 03's roofline clock.

#include <vector>

#include "inferlab/runtime/speculative_decoder.hpp"

namespace inferlab {

/// @brief The largest K a sweep measures.
inline constexpr int kSweepMaxK = 8;

/// @brief The K values a run measures: 1..kSweepMaxK for a sweep, else just @p k.
/// @param k tokens proposed per round (without a sweep)
/// @param sweep measure every K from 1 to kSweepMaxK
std::vector<int> k_values(int k, bool sweep);

/// @brief Expected tokens per round for K i.i.d. guesses each accepted with probability alpha:
/// 1 + alpha + ... + alpha^K = (1 - alpha^(K+1)) / (1 - alpha) (K + 1 when alpha = 1).
double expected_tokens_per_round(double alpha, int k);

/// @brief Predicted speed-up over plain decoding: expected tokens per round divided by the
/// round's cost in target decode steps, K c + v.
/// @param alpha acceptance rate
/// @param k tokens proposed per round
/// @param c cost of one draft step / cost of one target decode step
/// @param v cost of the verification forward (K + 1 tokens) / one target decode step (1 when
///          memory-bound: the textbook assumption)
double predicted_speedup(double alpha, int k, double c, double v = 1.0);

/// @brief A speculative run measured against plain decoding of the same model in the same
/// process: the measured speed-up next to the standard model's prediction.
struct SpeedupReport {
  double tokens_per_s = 0.0;        ///< generated tokens / decode seconds (prefill excluded)
  double plain_tokens_per_s = 0.0;  ///< the same for plain decoding
  double speedup_measured = 0.0;    ///< tokens_per_s / plain_tokens_per_s
  /// c: the proposer's time per proposed position (draft forward and its sampling) over one
  /// plain decode step (forward and sampling).
  double draft_cost_ratio = 0.0;
  /// v: one verification (target forward of the tail and the draft, distributions, verdict,
  /// rollback) over one plain decode step.
  double verify_cost_ratio = 0.0;
  double expected_tokens_per_round = 0.0;  ///< (1 - alpha^(K+1)) / (1 - alpha), alpha measured
  double speedup_predicted = 0.0;          ///< expected_tokens_per_round / (K c + v), all measured
  double speedup_predicted_ideal = 0.0;  ///< the textbook's v = 1 (verification as cheap as a step)
  double target_forwards_per_token = 0.0;  ///< target forward calls per generated token
};

/// @brief Compares @p spec with @p plain (see SpeedupReport).
/// @param spec a speculative_generate() result
/// @param plain a plain_generate() result of the same target and prompt
/// @param k tokens proposed per round (a tree: its node count)
/// @throws inferlab::Error if either run generated nothing.
SpeedupReport speedup_report(const SpecGeneration& spec, const SpecGeneration& plain, int k);

}  // namespace inferlab
