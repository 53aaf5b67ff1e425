#pragma once
/// @file speculative_sim.hpp
/// @brief Speculative decoding on chapter 03's roofline clock: what a draft-target pair gains
/// on datacenter hardware, and how the gain shrinks as the batch grows toward the compute roof.
///
/// Per sequence and round: K draft decode steps, then one target step that verifies K + 1
/// tokens (a prefill-like chunk after the cached context). With acceptance alpha a round yields
/// (1 - alpha^(K+1)) / (1 - alpha) tokens on average, where plain decoding yields one per target
/// decode step. While the target step is memory-bound, verifying K + 1 tokens costs about as
/// much as decoding one; as the batch grows the verification's extra FLOPs reach the compute
/// roof, its time grows with K + 1, and speculation stops paying. The tokens per round are
/// expected_tokens_per_round() of speculative_speedup.hpp.

#include <cstdint>
#include <span>
#include <vector>

#include "inferlab/analysis/hardware.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/analysis/roofline.hpp"

namespace inferlab {

/// @brief One batch size of the simulation.
struct SpecSimPoint {
  int batch = 0;                  ///< sequences decoding together (each speculating)
  double plain_step_s = 0.0;      ///< target decode step of the batch (one token each)
  double draft_step_s = 0.0;      ///< draft decode step of the batch
  double verify_step_s = 0.0;     ///< target step verifying K + 1 tokens per sequence
  double tokens_per_round = 0.0;  ///< expected tokens per sequence and round
  double speedup = 0.0;           ///< tokens/s with speculation / tokens/s without
  /// Tokens per second each sequence gets with speculation: tokens_per_round over one round
  /// (K draft steps and one verification).
  double tokens_per_s = 0.0;
  bool verify_memory_bound = true;  ///< the verification step is below the ridge point
};

/// @brief Simulates every batch size of @p batches.
/// @param target the model that verifies
/// @param draft the model that proposes
/// @param hardware the machine (peak FLOP/s, bandwidth)
/// @param alpha acceptance rate in [0, 1]
/// @param k tokens proposed per round (>= 1)
/// @param context cached tokens per sequence
/// @param batches batch sizes (each >= 1)
/// @param options number formats and efficiencies (chapter 03)
/// @throws inferlab::ParameterError (`alpha`, `k`, `context`) for alpha outside [0, 1], k < 1,
/// context < 0 or not below the target's context, or a round of K + 1 positions after the
/// context that passes the target's context; inferlab::Error for a batch < 1.
std::vector<SpecSimPoint> simulate_speculation(const ModelConfig& target, const ModelConfig& draft,
                                               const Hardware& hardware, double alpha, int k,
                                               std::int64_t context, std::span<const int> batches,
                                               const CostOptions& options = {});

/// @brief The smallest simulated batch at which speculation no longer pays (speed-up < 1), or
/// -1 when it pays at every simulated batch.
int break_even_batch(std::span<const SpecSimPoint> points);

/// @brief One K of a sweep: every batch size simulated.
struct SpecSimCurve {
  int k = 0;                         ///< tokens proposed per round
  std::vector<SpecSimPoint> points;  ///< one per batch size
  int break_even = -1;               ///< break_even_batch(points)
};

/// @brief A simulated draft-target pair at several K and batch sizes (chapter 07's --clock sim).
struct SpecSimSweep {
  double alpha = 0.0;                ///< acceptance rate
  std::int64_t context = 0;          ///< cached tokens per sequence
  std::vector<int> batches;          ///< 1, 2, 4, ..., the largest batch
  std::vector<SpecSimCurve> curves;  ///< one per K
};

/// @brief Simulates @p target verifying for @p draft on @p hardware at every K of @p ks and
/// every batch 1, 2, 4, ... up to @p max_batch, with the hardware's own cost options
/// (cost_options_for()).
/// @param target the model that verifies
/// @param draft the model that proposes
/// @param hardware the machine
/// @param alpha acceptance rate in [0, 1]
/// @param ks the K values (each >= 1)
/// @param context cached tokens per sequence
/// @param max_batch the largest batch simulated (>= 1)
/// @throws inferlab::ParameterError as simulate_speculation(); inferlab::Error for a
/// max_batch < 1.
SpecSimSweep simulate_k_sweep(const ModelConfig& target, const ModelConfig& draft,
                              const Hardware& hardware, double alpha, std::span<const int> ks,
                              std::int64_t context, int max_batch = 1024);

}  // namespace inferlab
