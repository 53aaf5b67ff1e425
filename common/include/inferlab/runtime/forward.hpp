#pragma once
/// @file forward.hpp
/// @brief The transformer forward pass on the CPU: T tokens at consecutive positions of one
/// sequence, their keys and values appended to a KVCache, logits out.
///
/// One call handles both phases of inference:
///  - the naive loop (chapter 01) calls it on the whole sequence from position 0 with an empty
///    cache at every step;
///  - prefill (chapter 02) calls it once on the prompt, decode once per new token.
/// Linear layers run as one matrix-matrix product over the T tokens.

#include <span>
#include <vector>

#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/kv_sequence.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief Which rows of logits a forward call produces.
enum class LogitsMode {
  last,  ///< only the last token's (the one generation samples from)
  all,   ///< one row per input token (for checks and --dump-logits)
};

/// @brief Tree attention for speculative verification (chapter 07): several candidate
/// continuations share one forward call without seeing each other.
///
/// Cache rows [0, base) are the sequence's accepted prefix and stay causal. Every row r >= base
/// is a node of a token tree whose parent is row parents[r - base] (a row in [base, r)), or -1
/// for a root, whose parent is the prefix's last token. A node attends to the prefix, its
/// ancestors and itself, in row order, and its RoPE position is base + (its depth), where a
/// root has depth 0: the position it would have if its path were the whole continuation.
/// A chain (parents[i] = base + i - 1) is ordinary causal attention, bit for bit.
struct TreeMask {
  int base = 0;                  ///< first tree row; rows before it are the causal prefix
  std::span<const int> parents;  ///< (rows - base) parent row of each tree row, -1 for a root
};

/// @brief One sequence's part of a batched forward step: a chunk of its tokens (one decode
/// token, or a chunk of its prompt) at consecutive positions from start_pos, and its cache.
struct BatchEntry {
  std::span<const int> tokens;  ///< (n) token ids, n >= 1
  int start_pos = 0;            ///< position of tokens[0]; must equal cache->length()
  /// This sequence's KV (distinct for every entry): a contiguous KVCache or a paged sequence,
  /// in host memory.
  KVSequence* cache = nullptr;
  /// Optional tree attention for the rows this entry writes (nullptr: causal). Its parents
  /// must cover every row from tree->base to start_pos + n - 1.
  const TreeMask* tree = nullptr;
};

/// @brief Runs a Model; owns the activation buffers, so reuse one per thread of work.
class ForwardPass {
 public:
  /// @brief Binds the pass to @p model (which must outlive it); buffers grow on first use.
  /// The model's linear weights are packed for the CPU matmul here (Model::cpu_linears(), once
  /// per model), so no timed step pays for it.
  explicit ForwardPass(const Model& model);

  /// @brief Forwards @p tokens at positions start_pos, start_pos+1, ... reading and extending
  /// @p cache (whose length must equal start_pos).
  /// @param tokens (T) token ids
  /// @param start_pos position of tokens[0]
  /// @param cache the sequence's cache: positions before start_pos are read, the T new ones
  ///        written, and its length becomes start_pos + T
  /// @param mode which rows of logits to compute
  /// @param logits resized to (1, V) or (T, V) according to @p mode
  /// @param tree optional tree attention (see TreeMask); nullptr for the causal forward
  /// @throws inferlab::Error on an empty input, a token outside [0, V), a cache length other
  /// than start_pos, positions beyond the cache capacity, or a malformed tree.
  /// @note Cost: about 2 * n_params * T FLOPs for the linear layers plus attention.
  void forward(std::span<const int> tokens, int start_pos, KVSequence& cache, LogitsMode mode,
               std::vector<float>& logits, const TreeMask* tree = nullptr);

  /// @brief A ragged batch step: several sequences at once, each contributing a chunk of
  /// tokens. The linear layers run as one matrix-matrix product over all the step's tokens;
  /// attention runs per sequence over its own cache.
  /// @param batch the entries (each cache extended by its tokens)
  /// @param logits resized to (entries, V): the last token's logits of each entry, in order
  ///        (LogitsMode::last), or (T, V): every token's, entry after entry (LogitsMode::all)
  /// @param mode which rows of logits to compute
  /// @throws inferlab::Error (before any cache is touched) on an empty batch, an empty entry,
  /// two entries sharing a cache, or any of forward()'s conditions.
  /// @note Batch invariance: every kernel's reduction order is independent of the batch, so
  /// each entry's logits have the same bits as when it runs alone.
  void forward_batch(std::span<const BatchEntry> batch, std::vector<float>& logits,
                     LogitsMode mode = LogitsMode::last);

  const Model& model() const { return *model_; }  ///< the model this pass runs

 private:
  const Model* model_;
  const CpuLinears* linears_;  // model_->cpu_linears()
  int capacity_ = 0;  // tokens the buffers below can hold
  // Activations, each (T, width):
  std::vector<float> x_, xb_, q_, k_, v_, att_, hb_, hb2_, out_;
  std::vector<int> pos_;
  std::vector<int> tree_begin_, tree_rows_;  // tree entries' visible rows (CSR), see TreeMask
  void reserve(int T);
  void run(std::span<const BatchEntry> batch, bool all_rows, std::vector<float>& logits);
};

/// @brief The naive loop's forward: logits of the last token of @p tokens, recomputed from
/// scratch (a fresh cache of type @p kv_type, every position re-processed).
/// @note Cost: the whole sequence's forward, about 2 * n_params * T FLOPs, at every step.
std::vector<float> naive_logits(ForwardPass& pass, std::span<const int> tokens,
                                DType kv_type = DType::f32);

}  // namespace inferlab
