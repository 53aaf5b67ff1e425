#pragma once
/// @file exercises/09_tree_speculation/exercise.hpp
/// @brief Exercise 09: the verification step of tree speculation, exact by recursive rejection
/// sampling over siblings.
///
/// The draft is a token tree (inferlab::DraftTree): node i holds a token, its parent (-1 for a
/// child of the context) and the distribution q_i it was drawn from (siblings are drawn without
/// replacement: a later sibling's q excludes the earlier ones). The target has computed its
/// sampling distribution p at the context (row 0) and after every node (row 1 + i).
///
/// The contract (README.md gives the rule and why it is exact):
/// - the result is a path down the tree from the context (each node a child of the one before)
///   and one more token, so a round emits path.size() + 1 tokens;
/// - whatever the draft proposed, the emitted tokens follow the target's distribution: the first
///   one p at the context, each next one p after the tokens before it;
/// - a node is accepted as often as the rule accepts it, so a better draft (or a wider tree)
///   yields more tokens per round.

#include <span>
#include <vector>

#include "inferlab/runtime/sampler.hpp"
#include "inferlab/runtime/speculative_verify.hpp"

namespace inferlab::ex09 {

/// @brief What verification decided.
struct TreeVerdict {
  std::vector<int> path;  ///< accepted node indices, from the context's child down
  int next_token = -1;    ///< the token drawn after the path (from the residual, or p at a leaf)
};

/// @brief Verifies @p tree against the target's distributions.
/// @param tree the draft: tokens, parents (topological order: a parent comes before its
///        children) and q rows of V entries each
/// @param p (1 + n, V) the target's distributions: row 0 at the context, row 1 + i after node i
/// @param rng the source of uniform numbers (Rng::next_f32), in any order you like
/// @return the accepted path and the next token
TreeVerdict verify_tree(const DraftTree& tree, std::span<const float> p, Rng& rng);

}  // namespace inferlab::ex09
