#pragma once
/// @file transformer.hpp
/// @brief The Llama-2 forward pass on the GPU: weights uploaded once, a device KV cache for one
/// sequence, and the best version of every kernel. The same order of operations as the CPU
/// inferlab::ForwardPass (common/src/runtime/forward.cpp), so the two can be compared logit by logit.
///
/// Plain C++ header (no CUDA types): the implementation lives behind a pointer. It takes the
/// model's description as the CPU side holds it (inferlab::ModelConfig and inferlab::Weights,
/// model/model_config.hpp), so nothing is copied field by field.

#include <cstddef>
#include <memory>

#include "inferlab/model/model_config.hpp"

namespace inferlab::cuda {

/// @brief KV blocks in device memory (float32): per layer, keys and values each
/// (num_blocks * block_size, KV) floats, the layout of inferlab::HostKVPool. Shared by every
/// sequence of a batched step, each addressing it through its own block table.
class CudaKVPool {
 public:
  /// @brief Allocates and zeroes the blocks.
  /// @throws std::invalid_argument for a size < 1, std::runtime_error without a device or memory.
  CudaKVPool(int n_layers, int kv_dim, int num_blocks, int block_size);
  ~CudaKVPool();
  CudaKVPool(CudaKVPool&&) noexcept;             ///< takes over the device memory
  CudaKVPool& operator=(CudaKVPool&&) noexcept;  ///< frees this pool's memory, then takes over

  int n_layers() const;      ///< L
  int kv_dim() const;        ///< KV floats per row
  int num_blocks() const;    ///< blocks
  int block_size() const;    ///< positions per block
  float* keys(int layer);    ///< device pointer to layer @p layer's key rows
  float* values(int layer);  ///< device pointer to layer @p layer's value rows
  /// @brief Floats one block holds over all layers, keys then values per layer.
  std::size_t block_floats() const;
  /// @brief Copies block @p src into block @p dst on the device (copy-on-write).
  void copy_block(int src, int dst);
  /// @brief Copies block @p id to @p host (block_floats() floats; swap-out over PCIe).
  void read_block(int id, float* host) const;
  /// @brief Copies @p host (block_floats() floats) into block @p id (swap-in).
  void write_block(int id, const float* host);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// @brief One sequence's share of a batched step (all pointers are host memory).
struct CudaBatchEntry {
  const int* tokens = nullptr;       ///< (count) token ids at positions start_pos..
  int count = 0;                     ///< >= 1
  int start_pos = 0;                 ///< positions before it are already in the pool
  const int* block_table = nullptr;  ///< (num_blocks) physical blocks of this sequence
  int num_blocks = 0;                ///< entries of block_table: capacity = num_blocks * B
};

/// @brief A model resident on the GPU with the KV cache of one sequence.
class CudaTransformer {
 public:
  /// @brief Validates the dimensions, uploads every weight once and allocates the KV cache
  /// (2 * L * S * KV floats, S = config.seq_len).
  /// @param config the model's dimensions (shared_classifier is not read: a null @p weights.wcls
  ///        or one equal to token_embedding means a shared classifier, uploaded once)
  /// @param weights host pointers to every tensor, read only here: they may be freed afterwards
  /// @throws std::invalid_argument for unusable dimensions or missing weights,
  ///         std::runtime_error when there is no CUDA device or memory runs out.
  CudaTransformer(const ModelConfig& config, const Weights& weights);
  ~CudaTransformer();
  /// @brief Takes over the other model's device memory and cache; the source is left unusable.
  CudaTransformer(CudaTransformer&&) noexcept;
  /// @brief Frees this model's device memory, then takes over the other's.
  CudaTransformer& operator=(CudaTransformer&&) noexcept;

  /// @brief Forwards @p tokens (host array of T ids) at positions start_pos.., appending their
  /// keys and values to the device cache, and copies logits back to the host.
  /// @param tokens (T) host token ids, each in [0, V)
  /// @param T number of tokens (>= 1; start_pos + T <= S)
  /// @param start_pos must equal length()
  /// @param all_logits true: T rows of logits, false: only the last token's
  /// @param host_logits (T, V) or (1, V) host floats, written
  /// @throws std::invalid_argument for T < 1, a token outside [0, V), start_pos != length() or
  ///         positions beyond seq_len (nothing is changed then).
  void forward(const int* tokens, int T, int start_pos, bool all_logits, float* host_logits);

  /// @brief A ragged batched step: every entry's tokens in one pass through the weights (one
  /// GEMM per layer over all tokens), attention per sequence through its block table into
  /// @p pool. The single-sequence calls above are this with one entry and an internal pool.
  /// @param entries (n) the sequences of the step (each with its own blocks)
  /// @param n number of entries (>= 1)
  /// @param pool the KV blocks every entry's table points into (n_layers and kv_dim of this model)
  /// @param all_logits true: one row per token (T rows), false: the last token of each entry
  /// @param host_logits (rows, V) host floats, written
  /// @return rows written
  /// @throws std::invalid_argument (nothing changed) for an empty entry, a token outside
  /// [0, V), positions beyond an entry's blocks, or a block id outside the pool.
  int forward_batch(const CudaBatchEntry* entries, int n, CudaKVPool& pool, bool all_logits,
                    float* host_logits);

  /// @brief forward_batch() with the argmax of each entry's last logits row taken on the device
  /// (argmax_cuda, lowest id on a tie): only the n token ids come back (4 bytes per entry instead
  /// of 4 * V).
  /// @param entries (n) the sequences of the step, as for forward_batch()
  /// @param n number of entries (>= 1)
  /// @param pool the device KV pool every entry's blocks live in
  /// @param next_tokens (n) host ints, written
  /// @throws std::invalid_argument as forward_batch() does.
  void forward_batch_greedy(const CudaBatchEntry* entries, int n, CudaKVPool& pool,
                            int* next_tokens);
  /// @brief Like forward() for the last token only, but the argmax is taken on the device and
  /// only the token id comes back (4 bytes instead of 4*V).
  int forward_greedy(const int* tokens, int T, int start_pos);

  /// @brief Empties the KV cache (a new sequence starts at position 0).
  void reset();
  /// @brief Positions held by the KV cache.
  int length() const;
  /// @brief The model's dimensions.
  const ModelConfig& config() const;
  /// @brief Bytes of device memory held by the weights.
  std::size_t weight_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab::cuda
