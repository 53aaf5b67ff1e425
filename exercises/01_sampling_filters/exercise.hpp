#pragma once
/// @file exercises/01_sampling_filters/exercise.hpp
/// @brief Exercise 01: the two adaptive truncation filters of the sampler, top-p and min-p.
///
/// Both take the probabilities of one decoding step (after softmax, possibly after earlier
/// filters have zeroed some entries) and zero out the tokens that must not be drawn. They never
/// change the value of a token they keep and never renormalise: the sampler does that once, after
/// the last filter. The contract is the one of inferlab::top_p_filter and inferlab::min_p_filter
/// in inferlab/runtime/sampler.hpp; these live in their own namespace so that the test can compare both.

#include <span>

namespace inferlab::ex01 {

/// @brief Top-p (nucleus) filter: keeps the smallest set of most probable tokens whose mass
/// reaches @p top_p and zeroes every other entry, in place.
///
/// Walk the tokens from most to least probable, summing their mass; a token is kept when the
/// mass of the tokens before it is still below @p top_p, so the token that crosses the threshold
/// is kept and the walk stops right after it. Mass is measured relative to the sum of @p probs,
/// so the input need not be normalised. Equal probabilities are ordered by token id (the lower
/// id counts as more probable).
///
/// @param probs  (V) non-negative probabilities of the V tokens of the vocabulary; modified.
/// @param top_p  in (0, 1]; 1 keeps everything (no-op).
/// @note O(V log V) for the sort; one pass over V to zero.
void top_p_filter(std::span<float> probs, float top_p);

/// @brief Min-p filter: zeroes every token whose probability is below @p min_p times the largest
/// probability, in place. Tokens exactly at the threshold are kept.
///
/// The threshold scales with the model's confidence: with min_p = 0.1 a leading token at 0.6
/// makes the cut 0.06, a leading token at 0.05 makes it 0.005.
///
/// @param probs  (V) non-negative probabilities (normalised or not: only ratios matter); modified.
/// @param min_p  in [0, 1]; 0 keeps everything (no-op), 1 keeps only the most probable token(s).
/// @note O(V): one pass for the maximum, one to zero.
void min_p_filter(std::span<float> probs, float min_p);

}  // namespace inferlab::ex01
