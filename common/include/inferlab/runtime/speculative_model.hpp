#pragma once
/// @file speculative_model.hpp
/// @brief The models of speculative decoding (chapter 07): the target, a draft model, or the
/// target's first layers (early exit), each with its own sequence's cache. SpecModel is the one
/// place chapter 07 runs a forward pass.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inferlab/base/device.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/block_allocator.hpp"
#include "inferlab/runtime/kv_rollback.hpp"
#include "inferlab/runtime/runner.hpp"

namespace inferlab {

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
  /// @throws inferlab::Error for a capacity outside [1, seq_len], or a device that cannot run
  /// here; inferlab::ParameterError (`block_size`) for a negative block size.
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

  /// @brief Empties the cache and forwards every token of @p prompt but the last (the first
  /// round or decode step forwards it, and gets the logits after it).
  /// @param prompt (P) BOS + prompt ids
  void prefill(std::span<const int> prompt);
  /// @brief Rolls the cache back to what @p context still needs: the longest prefix of it the
  /// cache holds as a plain sequence, short of its last token (whose logits were not kept), and
  /// returns that length. context[resume_point(context)..] are the tokens to forward next.
  /// @param context (n >= 1) every token so far
  int resume_point(std::span<const int> context);
  /// @brief Brings the cache to hold @p context but its last token, then forwards that token
  /// (and whatever else of @p context the cache lacked) in one call.
  /// @param context (n >= 1) every token so far
  /// @param logits (1, V) on return: the logits after the context's last token
  void forward_context(std::span<const int> context, std::vector<float>& logits);

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

}  // namespace inferlab
