#pragma once
/// @file runner.hpp
/// @brief The one boundary to the device: a model runner executes batched forward steps for
/// sequences whose KV memory somebody else manages.
///
/// Everything that runs the model goes through here: generate() (chapters 01-02), the serving
/// engine (chapters 04-07), the chapter 02 and 03 measurements and the benchmarks. A runner
///  - makes KV pools on its own device (make_pool; make_cache for one contiguous sequence);
///  - runs one ragged step: each BatchEntry forwards a chunk of one sequence (a prompt chunk or
///    one decode token), all of the step's tokens through each weight matrix at once, attention
///    per sequence through its block table.
/// The logits come back to host memory, because sampling runs on the host (the copy is counted
/// in logits_bytes_copied(); chapter 01 shows what it costs on a GPU), except for plain greedy
/// decoding (step_greedy), where a GPU returns only the chosen token ids.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "inferlab/base/device.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/kv_pool.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief Runs a model's forward pass on one device.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  ModelRunner(const ModelRunner&) = delete;             ///< holds device state: not copied
  ModelRunner& operator=(const ModelRunner&) = delete;  ///< see ModelRunner(const ModelRunner&)

  virtual Device device() const = 0;              ///< where the forward pass runs
  const Model& model() const { return *model_; }  ///< the model (must outlive the runner)
  const ModelConfig& config() const { return model_->config(); }  ///< its shapes

  /// @brief A pool of @p num_blocks blocks of @p block_size positions in @p type, on this
  /// runner's device.
  /// @throws inferlab::Error for bad sizes, a type the device does not support, or no memory.
  virtual std::unique_ptr<KVPool> make_pool(int num_blocks, int block_size, DType type) const = 0;

  /// @brief One batched step.
  /// @param batch the entries; each entry's cache must live in a pool made by this runner, its
  ///        length must equal its start_pos, and its blocks must cover the new positions
  /// @param mode LogitsMode::last: one row per entry (its last token); LogitsMode::all: one row
  ///        per token, entry after entry
  /// @param logits resized to (rows, V), in host memory
  /// @throws inferlab::Error (no cache changed) for any invalid entry.
  /// @note Cost: about 2 * n_params FLOPs per token for the linear layers (the weights are read
  /// once for the whole batch), plus each sequence's attention over its own cache.
  virtual void step(std::span<const BatchEntry> batch, LogitsMode mode,
                    std::vector<float>& logits) = 0;

  /// @brief One batched step that returns each entry's greedy next token: the argmax of its
  /// last logits row, the lowest id on a tie (the Sampler's greedy rule without penalties).
  /// The CPU runner computes the logits and takes the argmax on the host; the CUDA runner takes
  /// it on the device, so only the token ids cross to the host (4 bytes per entry, not 4 * V).
  /// @param batch as for step()
  /// @param next resized to (entries): the token chosen for each entry
  /// @throws inferlab::Error as step() does, or for a NaN logit on the host.
  virtual void step_greedy(std::span<const BatchEntry> batch, std::vector<int>& next);

  /// @brief Bytes copied from the device to the host for logits so far (0 on the CPU).
  std::size_t logits_bytes_copied() const { return logits_bytes_copied_; }

 protected:
  /// @brief Binds the runner to @p model.
  explicit ModelRunner(const Model& model) : model_(&model) {}
  std::size_t logits_bytes_copied_ = 0;  ///< see logits_bytes_copied()
  std::vector<float> greedy_logits_;     ///< (entries, V) step_greedy()'s logits, reused

 private:
  const Model* model_;
};

/// @brief A runner for @p model on @p device.
/// @throws inferlab::Error when the device cannot run here (require_device()).
std::unique_ptr<ModelRunner> make_runner(const Model& model, Device device);

/// @brief A contiguous cache of @p capacity positions (0 = the model's seq_len) on the
/// runner's device.
/// @throws inferlab::Error if capacity is outside [1, seq_len].
KVCache make_cache(const ModelRunner& runner, int capacity = 0, DType type = DType::f32);

/// @brief Forwards @p tokens of one sequence at positions start_pos.. (a one-entry step).
/// @param runner the device's runner
/// @param tokens (T) token ids
/// @param start_pos position of tokens[0]; must equal cache.length()
/// @param cache the sequence's KV, in a pool made by @p runner
/// @param mode which rows of logits to compute
/// @param logits (1, V) or (T, V) according to @p mode
void run_sequence(ModelRunner& runner, std::span<const int> tokens, int start_pos,
                  KVSequence& cache, LogitsMode mode, std::vector<float>& logits);

}  // namespace inferlab
