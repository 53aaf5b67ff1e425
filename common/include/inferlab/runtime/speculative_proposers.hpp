#pragma once
/// @file speculative_proposers.hpp
/// @brief The guessers of speculative decoding (chapter 07): a draft model (a second model, or
/// the target's first layers: early exit) sampling K tokens, an n-gram lookup in the context,
/// and a token tree from a draft model. Each returns a DraftTree for verify_draft().

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "inferlab/runtime/sampler.hpp"
#include "inferlab/runtime/speculative_model.hpp"
#include "inferlab/runtime/speculative_verify.hpp"

namespace inferlab {

/// @brief Something that guesses continuations of a context: a draft model, the target's own
/// first layers, an n-gram lookup, or a tree of draft guesses.
class Proposer {
 public:
  virtual ~Proposer() = default;
  /// @brief Short name for tables and JSON ("draft", "early-exit", "ngram", "tree").
  virtual std::string name() const = 0;
  /// @brief Proposes a draft continuing @p context.
  /// @param context every token so far (BOS, prompt, generated)
  /// @param max_nodes the most nodes the round can verify (room left in the context)
  /// @param out the draft (cleared first); it may be empty (nothing to guess)
  virtual void propose(std::span<const int> context, int max_nodes, DraftTree& out) = 0;
  /// @brief Processes the prompt before decoding starts (a draft model prefills its cache,
  /// SpecModel::prefill, so the timed rounds do not include it). The default does nothing.
  /// @param prompt (P) BOS + prompt ids
  virtual void prefill(std::span<const int> prompt) { (void)prompt; }
  /// @brief The draft model, if the proposer runs one (for its forward counters), else nullptr.
  virtual const SpecModel* draft_model() const { return nullptr; }
};

/// @brief A proposer that drafts with a model (DraftModelProposer, TreeProposer): the draft
/// prefills the prompt, reports its forward counters, and draws from its own random stream,
/// derived from the sampling seed but independent of the draws that verify its guesses.
class ModelProposer : public Proposer {
 public:
  void prefill(std::span<const int> prompt) override { draft_->prefill(prompt); }  ///< see Proposer
  const SpecModel* draft_model() const override { return draft_; }                 ///< see Proposer

 protected:
  /// @param draft the draft model (must outlive this object)
  /// @param sampling the sampling parameters (the target's); the seed drives the draft's draws
  ModelProposer(SpecModel& draft, const SamplingParams& sampling);
  SpecModel* draft_;           ///< the draft model
  Sampler sampler_;            ///< the target's sampling, applied to the draft's logits
  Rng rng_;                    ///< the draft's draws
  std::vector<float> logits_;  ///< the draft's last forward
};

/// @brief A draft model (a second model with the target's vocabulary, or the target's first
/// layers: early exit) that samples K tokens one by one, each from its own sampling
/// distribution q (same SamplingParams as the target's).
class DraftModelProposer final : public ModelProposer {
 public:
  /// @param draft the draft model (must outlive this object)
  /// @param sampling the sampling parameters (the target's); the seed drives the draft's draws
  /// @param k tokens per round (>= 1)
  /// @param name reported name ("draft" or "early-exit")
  /// @throws inferlab::ParameterError (`k`) if k < 1.
  DraftModelProposer(SpecModel& draft, const SamplingParams& sampling, int k, std::string name);
  std::string name() const override { return name_; }  ///< see Proposer
  void propose(std::span<const int> context, int max_nodes,
               DraftTree& out) override;  ///< see Proposer

 private:
  int k_;
  std::string name_;
  std::vector<int> history_;
};

/// @brief Prompt lookup: finds the most recent earlier occurrence of the context's last n
/// tokens (n from the maximum down to 1) and proposes the K tokens that followed it. No model:
/// q is one-hot, and the cost is a scan of the context.
class NgramProposer final : public Proposer {
 public:
  /// @param max_n longest suffix to match (>= 1)
  /// @param k tokens proposed per round (>= 1)
  /// @param vocab_size V (for the one-hot q rows)
  /// @throws inferlab::ParameterError (`max_n`, `k`) if max_n < 1 or k < 1.
  NgramProposer(int max_n, int k, int vocab_size);
  std::string name() const override { return "ngram"; }  ///< see Proposer
  void propose(std::span<const int> context, int max_nodes,
               DraftTree& out) override;  ///< see Proposer

 private:
  int max_n_, k_, vocab_;
};

/// @brief The most nodes a TreeProposer's full tree may have.
inline constexpr int kMaxTreeNodes = 4096;

/// @brief Nodes of a full tree of @p depth levels with @p branch children per node:
/// branch + branch^2 + ... + branch^depth (a double: it can be far beyond any int).
/// @param branch children per node
/// @param depth levels
double tree_node_count(int branch, int depth);

/// @brief A token tree from a draft model (EAGLE-2 style): each node gets @p branch children,
/// @p depth levels, tree_node_count() nodes, one draft forward per level (tree attention).
/// Greedy: the branch highest penalised draft logits, one-hot q each.
/// Sampling: branch draws without replacement from q, the i-th sibling's q being q without the
/// earlier siblings, renormalised (so recursive rejection over siblings stays exact).
class TreeProposer final : public ModelProposer {
 public:
  /// @param draft the draft model (must outlive this object)
  /// @param sampling the sampling parameters (the target's)
  /// @param branch children per node (>= 1)
  /// @param depth levels (>= 1)
  /// @throws inferlab::ParameterError (`tree_branch`, `tree_depth`) if branch or depth < 1, or
  /// the tree has over kMaxTreeNodes nodes; inferlab::Error if the draft runs on CUDA (tree
  /// attention is CPU only).
  TreeProposer(SpecModel& draft, const SamplingParams& sampling, int branch, int depth);
  std::string name() const override { return "tree"; }  ///< see Proposer
  void propose(std::span<const int> context, int max_nodes,
               DraftTree& out) override;  ///< see Proposer

 private:
  int branch_, depth_;
};

}  // namespace inferlab
