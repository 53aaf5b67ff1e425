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
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/kv_pool.hpp"
#include "inferlab/runtime/kv_sequence.hpp"

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
  /// in a pool made by the runner that runs the step.
  KVSequence* cache = nullptr;
  /// Optional tree attention for the rows this entry writes (nullptr: causal). Its parents
  /// must cover every row from tree->base to start_pos + n - 1.
  const TreeMask* tree = nullptr;
};

/// @brief Checks a batch as every runner needs it, before any cache is touched: at least one
/// entry; every entry with tokens, each in [0, V), a cache of its own in a pool for this model,
/// of length start_pos, with room for the new positions; a tree, when given, naming a parent
/// before it for every row it covers (TreeMask).
/// @param batch the step's entries
/// @param config the model the step runs
/// @throws inferlab::Error naming the first problem found.
void validate_batch(std::span<const BatchEntry> batch, const ModelConfig& config);

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
