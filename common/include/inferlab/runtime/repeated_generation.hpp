#pragma once
/// @file repeated_generation.hpp
/// @brief Timing a generation more than once (chapter 01's `--reps`): the same seed gives the
/// same tokens, so each step's time can be the median over the repetitions. One sample on a busy
/// machine can be off by 2x; the median of a few is not.
#include <vector>

#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/generate.hpp"

namespace inferlab {

/// @brief A generation timed @p reps times.
struct RepeatedGeneration {
  /// The repetition whose end-to-end time is the median (for the latency metrics), with each
  /// step's seconds replaced by that step's median over the repetitions and the first run's
  /// logits (if it kept them).
  GenerationResult median;
  std::vector<double> spread;  ///< (n_steps): each step's (max - min) / median
  double max_spread = 0.0;     ///< the largest of spread (0 for no steps)
  int reps = 1;                ///< repetitions behind each number
};

/// @brief Runs the generation @p options describes @p reps - 1 more times after @p first (its
/// first run, made with the same options) and keeps the medians.
/// @throws inferlab::Error if a repetition generates different tokens (the loop is not
/// deterministic) or @p reps < 1.
RepeatedGeneration repeat_for_medians(const Model& model, const Tokenizer& tokenizer,
                                      const GenerateOptions& options, int reps,
                                      GenerationResult first);

}  // namespace inferlab
