#pragma once
/// @file speculative_verify.hpp
/// @brief The centre of speculative decoding (chapter 07): a draft (a chain or a tree of
/// proposed tokens, each with the distribution q it was drawn from) and its exact verification
/// against the target's distributions p by recursive rejection sampling, so the output is
/// distributed exactly as the target's own sampling.
///
/// One round, with the context c (every token so far; the target's cache holds all of them but
/// the last):
///  1. the proposer returns a DraftTree: K tokens in a chain, or a token tree, each with the
///     distribution q it was drawn from (speculative_proposers.hpp);
///  2. the target forwards the context's last token and every draft node in ONE call (tree
///     attention when the draft is a tree), which gives p after the context and after every node;
///  3. verify_draft() walks the tree: accept a node x with probability min(1, p(x) / q(x)); on
///     rejection, p becomes norm(max(0, p - q)) and the next sibling is tried; when no child is
///     accepted, the next token is drawn from what is left of p (the bonus token when a leaf
///     was reached);
///  4. the caches are rolled back to the accepted path (kv_rollback.hpp), so the next round
///     starts from exactly the tokens kept (speculative_decoder.hpp runs the rounds).
/// p and q are the *sampling* distributions (penalties, temperature, top-k, min-p, top-p),
/// computed for both by Sampler::distribution with the same parameters and history.

#include <span>
#include <vector>

#include "inferlab/runtime/sampler.hpp"

namespace inferlab {

/// @brief A draft: a tree of proposed tokens in topological order (a chain is the tree whose
/// node i has parent i - 1). Siblings are tried in their order.
struct DraftTree {
  std::vector<int> tokens;   ///< (n) the token of each node
  std::vector<int> parents;  ///< (n) parent node index (< own index), -1 for a child of the context
  /// (n, V) the distribution each node was drawn from, given its path and its earlier siblings
  /// (a one-hot row for a deterministic proposal). Verification needs q(x) and, on rejection,
  /// all of q.
  std::vector<std::vector<float>> q;

  int size() const { return static_cast<int>(tokens.size()); }  ///< n
  /// @brief Removes every node.
  void clear();
  /// @brief Appends a node and returns its index.
  int add(int token, int parent, std::vector<float> q_row);
  /// @brief True when node i's parent is i - 1 for every node (a plain chain).
  bool is_chain() const;
  /// @brief Depth of every node (0 for a child of the context).
  std::vector<int> depths() const;
};

/// @brief What verification decided.
struct Verdict {
  std::vector<int> path;  ///< accepted node indices, from the context's child down
  int next_token = -1;    ///< drawn from the residual (a rejection) or from p (the bonus)
};

/// @brief Exact verification of a draft tree by recursive rejection sampling.
///
/// From the context (then from each accepted node), with r = p at that point: for each child x
/// with distribution q_x in order, accept with probability min(1, r(x) / q_x(x)) (a uniform u
/// from @p rng: accept if u q_x(x) < r(x)); on rejection r = norm(max(0, r - q_x)). When a
/// child is accepted, descend into it; when none is, the next token is drawn from r. The result
/// is distributed exactly as the target's sampling: each step is a rejection sampler whose
/// output distribution is r (see the chapter text). If r - q leaves no mass (possible only by
/// round-off), r falls back to p.
/// @param tree the draft
/// @param p (1 + n, V) the target's sampling distributions: row 0 after the context, row 1 + i
///          after node i
/// @param greedy T = 0: p rows are one-hot; accept a child iff it is p's argmax, take the argmax
///               as the next token, and draw no random number
/// @param rng uniform draws (coin flips, residual draws)
/// @throws inferlab::Error if p has the wrong size or a node's q gives its own token no mass.
Verdict verify_draft(const DraftTree& tree, std::span<const float> p, bool greedy, Rng& rng);

}  // namespace inferlab
