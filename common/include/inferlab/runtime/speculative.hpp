#pragma once
/// @file speculative.hpp
/// @brief Speculative decoding (chapter 07): a cheap proposer guesses tokens, the target model
/// checks them all in one forward call, and exact rejection sampling keeps the output
/// distribution the target's own.
///
/// One round, with the context c (every token so far; the target's cache holds all of them but
/// the last):
///  1. the proposer returns a DraftTree: K tokens in a chain, or a token tree, each with the
///     distribution q it was drawn from;
///  2. the target forwards the context's last token and every draft node in ONE call (tree
///     attention when the draft is a tree), which gives p after the context and after every node;
///  3. verify_draft() walks the tree: accept a node x with probability min(1, p(x) / q(x)); on
///     rejection, p becomes norm(max(0, p - q)) and the next sibling is tried; when no child is
///     accepted, the next token is drawn from what is left of p (the bonus token when a leaf
///     was reached);
///  4. the caches are rolled back to the accepted path (KVRollback), so the next round starts
///     from exactly the tokens kept.
/// p and q are the *sampling* distributions (penalties, temperature, top-k, min-p, top-p),
/// computed for both by Sampler::distribution with the same parameters and history.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inferlab/runtime/block_allocator.hpp"
#include "inferlab/base/device.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace inferlab {

// ---------------------------------------------------------------------------------------------
// KV rollback
// ---------------------------------------------------------------------------------------------

/// @brief What speculative decoding needs from a sequence's KV storage to undo a round: drop
/// the rejected tail, and close the gaps a verified tree path leaves. The contiguous KVCache
/// implements it with ContiguousKVRollback; a paged sequence with PagedKVRollback, by editing
/// its block table (truncate frees whole blocks past the new end; keep_rows copies the kept
/// rows into place, copying a shared block first).
class KVRollback {
 public:
  virtual ~KVRollback() = default;
  /// @brief Positions that hold valid keys and values.
  virtual int length() const = 0;
  /// @brief Forgets every position >= @p length (rejected draft tokens).
  /// @throws inferlab::Error if @p length is outside [0, length()].
  virtual void truncate(int length) = 0;
  /// @brief Keeps positions [0, base) and the listed rows, moved to base, base + 1, ...: the
  /// accepted path of a verified tree. The length becomes base + rows.size().
  /// @param base the first row the tree wrote (the verified context's length)
  /// @param rows (m) ascending rows in [base, length()) (a chain's accepted prefix is base..base+m-1,
  ///        which moves nothing)
  /// @throws inferlab::Error if a row is out of range or the list is not ascending.
  virtual void keep_rows(int base, std::span<const int> rows) = 0;
};

/// @brief KVRollback over a contiguous KVCache: truncation is set_length; keep_rows copies
/// each kept row down (O(rows x L x KV) bytes, a handful of rows per round).
class ContiguousKVRollback final : public KVRollback {
 public:
  /// @brief Wraps @p cache, which must outlive this object.
  explicit ContiguousKVRollback(KVCache& cache) : cache_(&cache) {}
  int length() const override { return cache_->length(); }       ///< see KVRollback
  void truncate(int length) override;                            ///< see KVRollback
  void keep_rows(int base, std::span<const int> rows) override;  ///< see KVRollback

 private:
  KVCache* cache_;
};

/// @brief KVRollback over a paged KVSequence whose blocks come from a BlockAllocator (chapter
/// 05's memory): rolling back gives whole blocks back, so rejected guesses never hold memory.
///
/// A block another table also holds (reference count > 1: a fork, a shared prefix) is never
/// written: reserve() and keep_rows() give the sequence its own copy first (copy-on-write, as
/// PagedKVManager::append does). truncate() only releases references, so it never copies.
class PagedKVRollback final : public KVRollback {
 public:
  /// @brief Wraps @p sequence and the @p allocator its blocks come from (both must outlive this
  /// object; the sequence's pool must have allocator.num_blocks() blocks).
  /// @throws inferlab::Error if the pool and the allocator disagree on the block count.
  PagedKVRollback(KVSequence& sequence, BlockAllocator& allocator);
  int length() const override { return seq_->length(); }  ///< see KVRollback
  /// @brief see KVRollback; also releases every block that holds no position < @p length, so
  /// the table keeps ceil(length / block_size) blocks.
  void truncate(int length) override;
  /// @brief see KVRollback; a destination row in a shared block is written into a private copy
  /// of that block. The blocks past the new end are released as by truncate().
  void keep_rows(int base, std::span<const int> rows) override;
  /// @brief Prepares positions [length(), @p length) for a forward call to write: appends
  /// blocks from the allocator until the table covers them, and replaces every shared block
  /// among those positions by a private copy. The valid length does not change.
  /// @throws inferlab::Error (nothing changed) when the allocator has too few free blocks.
  void reserve(int length);
  /// @brief Blocks the next reserve(@p length) takes from the allocator (new and copied).
  int blocks_needed(int length) const;

 private:
  void make_private(int index);  // copy-on-write of logical block index if it is shared
  void release_from(int index);  // gives blocks index.. back and drops them from the table
  KVSequence* seq_;
  BlockAllocator* alloc_;
};

// ---------------------------------------------------------------------------------------------
// The model adaptor: the one place that runs a forward pass
// ---------------------------------------------------------------------------------------------

/// @brief Where a SpecModel runs and how it stores its one sequence's keys and values.
struct SpecModelOptions {
  int capacity = 0;             ///< positions the cache holds (0 = the model's seq_len)
  Device device = Device::cpu;  ///< where the forward pass runs (make_runner())
  /// 0: one contiguous KVCache. N > 0: a paged sequence in a pool of ceil(capacity / N) blocks
  /// of N positions; blocks are taken as the sequence grows and given back on rollback
  /// (PagedKVRollback).
  int block_size = 0;
};

/// @brief A model as speculative decoding uses it (target or draft): one sequence's cache and
/// the tokens it holds, a forward call that appends tokens, and rollback. Every forward of
/// chapter 07 goes through forward() here, which runs it as one step of the device's
/// ModelRunner (a chain of K tokens is a plain multi-token step), and it counts the calls and
/// their time (the cost ratio of the speed-up formula).
class SpecModel {
 public:
  /// @brief A model on the CPU with its own contiguous cache of @p capacity positions (0 = its
  /// seq_len).
  /// @param model the weights (must outlive this object)
  /// @param capacity positions the cache holds
  SpecModel(const Model& model, int capacity = 0);
  /// @brief A model on @p options.device with the storage @p options names.
  /// @param model the weights (must outlive this object)
  /// @param options capacity, device, contiguous or paged storage
  /// @throws inferlab::Error for a capacity outside [1, seq_len], a negative block size, or a
  /// device that cannot run here.
  SpecModel(const Model& model, const SpecModelOptions& options);
  /// @brief Early exit: the first @p layers layers of @p target with its final norm and
  /// classifier, as a draft with its own (shallower) cache.
  /// @throws inferlab::Error if @p layers is outside [1, target's layers].
  static std::unique_ptr<SpecModel> early_exit(const Model& target, int layers, int capacity = 0);
  /// @brief Early exit (see above) on the device and storage @p options names. On CUDA the
  /// runner uploads the first @p layers layers, the final norm and the classifier: the view is
  /// a model of its own to the device.
  static std::unique_ptr<SpecModel> early_exit(const Model& target, int layers,
                                               const SpecModelOptions& options);

  SpecModel(const SpecModel&) = delete;             ///< one cache, one owner: not copyable
  SpecModel& operator=(const SpecModel&) = delete;  ///< not copyable

  /// @brief The model's shape (for early exit: the truncated layer count).
  const ModelConfig& config() const { return model_->config(); }
  /// @brief Where the model came from.
  const std::string& name() const { return model_->name(); }
  /// @brief Positions the cache holds (valid rows).
  int length() const { return rollback_->length(); }
  /// @brief Positions the cache can hold.
  int capacity() const { return capacity_; }
  /// @brief Where the forward pass runs.
  Device device() const { return runner_->device(); }
  /// @brief Positions per KV block: 0 for the contiguous cache.
  int block_size() const { return block_size_; }
  /// @brief The paged storage's block allocator (nullptr for the contiguous cache): its counts
  /// show the blocks the sequence holds.
  const BlockAllocator* allocator() const { return allocator_.get(); }

  /// @brief Forwards @p tokens after the cached positions.
  /// @param tokens (T) token ids
  /// @param mode LogitsMode::all for one row per token, LogitsMode::last for the last only
  /// @param logits (T or 1, V) on return
  /// @param tree optional tree attention over the new rows (TreeMask); CPU only
  /// @throws inferlab::Error if the tokens do not fit in capacity(), or for a tree on CUDA
  /// (the CUDA runner attends causally only).
  void forward(std::span<const int> tokens, LogitsMode mode, std::vector<float>& logits,
               const TreeMask* tree = nullptr);

  /// @brief Rolls the cache back to the longest prefix of @p context it holds as a plain
  /// sequence (tree rows never count) and returns that length. This is the draft's rollback:
  /// whatever it guessed beyond the accepted tokens is dropped here.
  int rollback_to_prefix_of(std::span<const int> context);
  /// @brief KVRollback::truncate, keeping the token bookkeeping in step.
  void truncate(int length);
  /// @brief KVRollback::keep_rows, keeping the token bookkeeping in step.
  void keep_rows(int base, std::span<const int> rows);

  /// @brief Forward calls so far.
  long calls() const { return calls_; }
  /// @brief Tokens forwarded so far.
  long tokens_forwarded() const { return tokens_forwarded_; }
  /// @brief Wall seconds spent in forward calls so far.
  double seconds() const { return seconds_; }
  /// @brief Zeroes the three counters above.
  void reset_counters();

 private:
  SpecModel(std::unique_ptr<Model> view, const Model& model, const SpecModelOptions& options);
  std::unique_ptr<Model> view_;  // early exit: the truncated view this object owns
  const Model* model_;
  std::unique_ptr<ModelRunner> runner_;
  int capacity_ = 0, block_size_ = 0;
  std::unique_ptr<KVPool> pool_;               // paged: the pool the blocks live in
  std::unique_ptr<BlockAllocator> allocator_;  // paged: who holds which block
  std::unique_ptr<KVSequence> cache_;          // a KVCache, or a paged sequence over pool_
  std::unique_ptr<KVRollback> rollback_;       // over cache_
  PagedKVRollback* paged_ = nullptr;           // rollback_ when paged (it also reserves blocks)
  std::vector<int> tokens_;                    // (length) token of each cached row
  int tree_from_ = -1;  // first tree row (not part of a plain sequence), -1 if none
  long calls_ = 0, tokens_forwarded_ = 0;
  double seconds_ = 0.0;
};

// ---------------------------------------------------------------------------------------------
// Proposals
// ---------------------------------------------------------------------------------------------

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
  /// @brief Processes the prompt before decoding starts (a draft model prefills its cache, so
  /// the timed rounds do not include it). The default does nothing.
  /// @param prompt (P) BOS + prompt ids
  virtual void prefill(std::span<const int> prompt) { (void)prompt; }
  /// @brief The draft model, if the proposer runs one (for its forward counters), else nullptr.
  virtual const SpecModel* draft_model() const { return nullptr; }
};

/// @brief A draft model (a second model with the target's vocabulary, or the target's first
/// layers: early exit) that samples K tokens one by one, each from its own sampling
/// distribution q (same SamplingParams as the target's).
class DraftModelProposer final : public Proposer {
 public:
  /// @param draft the draft model (must outlive this object)
  /// @param sampling the sampling parameters (the target's); the seed drives the draft's draws
  /// @param k tokens per round (>= 1)
  /// @param name reported name ("draft" or "early-exit")
  /// @throws inferlab::Error if k < 1.
  DraftModelProposer(SpecModel& draft, const SamplingParams& sampling, int k, std::string name);
  std::string name() const override { return name_; }  ///< see Proposer
  void propose(std::span<const int> context, int max_nodes,
               DraftTree& out) override;                            ///< see Proposer
  void prefill(std::span<const int> prompt) override;               ///< see Proposer
  const SpecModel* draft_model() const override { return draft_; }  ///< see Proposer

 private:
  SpecModel* draft_;
  Sampler sampler_;
  Rng rng_;
  int k_;
  std::string name_;
  std::vector<float> logits_;
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
  /// @throws inferlab::Error if max_n < 1 or k < 1.
  NgramProposer(int max_n, int k, int vocab_size);
  std::string name() const override { return "ngram"; }  ///< see Proposer
  void propose(std::span<const int> context, int max_nodes,
               DraftTree& out) override;  ///< see Proposer

 private:
  int max_n_, k_, vocab_;
};

/// @brief A token tree from a draft model (EAGLE-2 style): each node gets @p branch children,
/// @p depth levels, branch + branch^2 + ... + branch^depth nodes, one draft forward per level
/// (tree attention). Greedy: the branch highest penalised draft logits, one-hot q each.
/// Sampling: branch draws without replacement from q, the i-th sibling's q being q without the
/// earlier siblings, renormalised (so recursive rejection over siblings stays exact).
class TreeProposer final : public Proposer {
 public:
  /// @param draft the draft model (must outlive this object)
  /// @param sampling the sampling parameters (the target's)
  /// @param branch children per node (>= 1)
  /// @param depth levels (>= 1)
  /// @throws inferlab::Error if branch or depth < 1, the tree has over 4096 nodes, or the
  /// draft runs on CUDA (tree attention is CPU only).
  TreeProposer(SpecModel& draft, const SamplingParams& sampling, int branch, int depth);
  std::string name() const override { return "tree"; }  ///< see Proposer
  void propose(std::span<const int> context, int max_nodes,
               DraftTree& out) override;                            ///< see Proposer
  void prefill(std::span<const int> prompt) override;               ///< see Proposer
  const SpecModel* draft_model() const override { return draft_; }  ///< see Proposer

 private:
  SpecModel* draft_;
  Sampler sampler_;
  SamplingParams params_;
  Rng rng_;
  int branch_, depth_;
  std::vector<float> logits_;
};

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The decoding loop
// ---------------------------------------------------------------------------------------------

/// @brief What rounds measured.
struct SpecStats {
  long rounds = 0;      ///< verification rounds (= target forward calls after the prefill)
  long proposed = 0;    ///< draft nodes proposed
  long accepted = 0;    ///< draft tokens accepted
  long emitted = 0;     ///< tokens the rounds produced (accepted + one per round)
  long rejections = 0;  ///< rounds that rejected a guess (the others accepted all they tried)
  std::vector<long> tried_at;     ///< (depth) rounds that had a guess to try at depth i
  std::vector<long> accepted_at;  ///< (depth) rounds that accepted a guess at depth i
  double draft_seconds = 0.0;     ///< in propose()
  double verify_seconds = 0.0;    ///< target forward + distributions + verification + rollback
  double target_forward_seconds = 0.0;  ///< the target's forward calls alone
  long draft_forwards = 0;              ///< draft model forward calls (0 for n-gram)

  /// @brief Acceptance rate alpha: accepted / (accepted + rejections), the share of tried
  /// positions that were accepted (a position after a rejection is never tried). The estimate
  /// of the per-token acceptance probability of the standard model.
  double acceptance_rate() const;
  /// @brief Accepted draft tokens per round.
  double mean_accepted_per_round() const;
  /// @brief Acceptance at depth i: accepted_at[i] / tried_at[i] (0 if never tried).
  double acceptance_at(int depth) const;
};

/// @brief Runs rounds of speculative decoding for one sequence on a target model.
class SpeculativeDecoder {
 public:
  /// @param target the target model (its cache is this decoder's sequence)
  /// @param proposer the guesser (its own state follows the context it is given)
  /// @param sampling the sampling parameters; the seed drives verification's draws
  /// @throws inferlab::Error for invalid sampling parameters, or a proposer whose draft
  /// model's vocabulary differs from the target's.
  SpeculativeDecoder(SpecModel& target, Proposer& proposer, const SamplingParams& sampling);

  /// @brief One round: propose, verify all in one target forward, roll back, and append the
  /// accepted tokens and the next token to @p context.
  /// @param context every token so far (>= 1 token); extended in place
  /// @param max_positions the round forwards no position at or beyond this (>= context size)
  /// @return the number of tokens appended (>= 1)
  /// @throws inferlab::Error if context is empty or already reaches max_positions.
  int round(std::vector<int>& context, int max_positions);
  /// @brief What the rounds measured so far.
  const SpecStats& stats() const { return stats_; }

 private:
  SpecModel* target_;
  Proposer* proposer_;
  Sampler sampler_;
  Rng rng_;
  bool greedy_;
  SpecStats stats_;
  DraftTree tree_;
  std::vector<float> logits_, p_;
  std::vector<int> chunk_, tree_parents_, history_;
};

/// @brief A finished generation.
struct SpecGeneration {
  std::vector<int> tokens;      ///< BOS, prompt, generated (like GenerationResult::tokens)
  double decode_seconds = 0.0;  ///< wall time after the prompt's prefill
  int generated = 0;            ///< new tokens (BOS included if it ended the sequence)
  SpecStats stats;              ///< the rounds' measurements (empty for plain decoding)
};

/// @brief Generates with speculative decoding until `steps` positions are forwarded or BOS is
/// drawn, exactly like generate(): same stopping rule, same tokens under greedy decoding.
/// @param target the target (its cache is cleared first)
/// @param proposer the guesser
/// @param prompt (P) BOS + prompt ids, P <= steps
/// @param steps positions to forward, prompt included (<= the target's capacity)
/// @param sampling the sampling parameters
/// @throws inferlab::Error on an empty prompt or one longer than steps.
SpecGeneration speculative_generate(SpecModel& target, Proposer& proposer,
                                    std::span<const int> prompt, int steps,
                                    const SamplingParams& sampling);

/// @brief The baseline: plain decoding with the same model adaptor (prefill, then one target
/// forward per token), timed the same way.
SpecGeneration plain_generate(SpecModel& target, std::span<const int> prompt, int steps,
                              const SamplingParams& sampling);

// ---------------------------------------------------------------------------------------------
// The standard model of the speed-up (Leviathan et al. 2023)
// ---------------------------------------------------------------------------------------------

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
