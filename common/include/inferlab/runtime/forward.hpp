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

#include "inferlab/model/model.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/kv_sequence.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

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
  // (hs/2) RoPE frequencies, the model's scaling applied (ModelConfig::rope_inv_freq).
  std::vector<float> rope_inv_freq_;
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
