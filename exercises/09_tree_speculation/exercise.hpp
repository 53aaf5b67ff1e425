#pragma once
/// @file exercises/09_tree_speculation/exercise.hpp
/// @brief Exercise 09: the verification step of tree speculation (EAGLE-2 style), exact by
/// recursive rejection sampling over siblings.
///
/// The draft is a token tree (inferlab::DraftTree): node i holds a token, its parent (-1 for a
/// child of the context) and the distribution q_i it was drawn from. The target has computed
/// its sampling distribution p at the context (row 0) and after every node (row 1 + i).
/// Verification walks down from the context:
///
///   r = p at the current point
///   for each child c of the current point, in node order:
///     x = token of c; draw u = rng.next_f32();
///     if u * q_c(x) < r(x): accept c, move to c, start again from its children with r = p at c
///     else: r = max(0, r - q_c), renormalised (if nothing is left, r = p at the current point)
///   no child accepted: the next token is sample_from(r, rng.next_f32()); stop.
///
/// At a leaf there are no children, so the last step draws the bonus token from p.

#include <span>
#include <vector>

#include "inferlab/runtime/sampler.hpp"
#include "inferlab/runtime/speculative_verify.hpp"

namespace inferlab::ex09 {

/// @brief What verification decided.
struct TreeVerdict {
  std::vector<int> path;  ///< accepted node indices, from the context's child down
  int next_token = -1;    ///< the token drawn from the residual (or the bonus from p)
};

/// @brief Verifies @p tree against the target's distributions.
/// @param tree the draft: tokens, parents (topological order: a parent comes before its
///        children) and q rows of V entries each
/// @param p (1 + n, V) the target's distributions: row 0 at the context, row 1 + i after node i
/// @param rng the uniform draws, consumed exactly as described in the file comment (one per
///        child tried, one for the final draw), so results can be compared draw for draw
/// @return the accepted path and the next token
TreeVerdict verify_tree(const DraftTree& tree, std::span<const float> p, Rng& rng);

}  // namespace inferlab::ex09
