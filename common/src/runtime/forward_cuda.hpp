#pragma once
/// @file forward_cuda.hpp
/// @brief The Llama-2 forward pass on the GPU, the twin of the CPU inferlab::ForwardPass
/// (forward.cpp): weights uploaded once, KV blocks in device memory, and the best version of
/// every kernel, in the same order of operations, so the two can be compared logit by logit.
///
/// Part of the CUDA backend module only (runner_cuda.cpp is its one user). Plain C++17 without
/// CUDA types, so that both nvcc and the runner's g++ compile it: the device state lives behind
/// a pointer. It takes the model's description as the core holds it (inferlab::ModelConfig and
/// inferlab::Weights, model/model_config.hpp), so nothing is copied field by field; a model
/// stored in a block format comes as BlockWeights, its matrices' blocks as the CPU keeps them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/model_config.hpp"

namespace inferlab::cuda {

/// @brief One matrix (d, n) on the host in a block format, as the device will hold it.
struct HostBlocks {
  kernels::TensorType type = kernels::TensorType::kQ8_0;  ///< Q8_0 or Q4_0
  const std::uint8_t* rows = nullptr;  ///< d rows of tensor_bytes(type, n) bytes, back to back
};

/// @brief The weights of a model stored in a block format (Model::float_weights() false) as
/// the CPU core keeps them (inferlab::CpuLinears and Model::stored_embedding()): every matrix
/// as its blocks, the norms as float32. Host memory, read only by the CudaForwardPass
/// constructor. Shapes as in inferlab::Weights, one matrix per layer.
struct BlockWeights {
  HostBlocks token_embedding;        ///< (V, D) embedding table, rows dequantized on lookup
  std::vector<HostBlocks> wq;        ///< (L) of (Q, D) query projections
  std::vector<HostBlocks> wk;        ///< (L) of (KV, D) key projections
  std::vector<HostBlocks> wv;        ///< (L) of (KV, D) value projections
  std::vector<HostBlocks> wo;        ///< (L) of (D, Q) attention output projections
  std::vector<HostBlocks> w1;        ///< (L) of (H, D) gate projections
  std::vector<HostBlocks> w2;        ///< (L) of (D, H) down projections
  std::vector<HostBlocks> w3;        ///< (L) of (H, D) up projections
  HostBlocks wcls;                   ///< (V, D) classifier; null rows, or token_embedding's: tied
  const float* rms_att = nullptr;    ///< (L, D) attention RMSNorm weights
  const float* rms_ffn = nullptr;    ///< (L, D) feed-forward RMSNorm weights
  const float* rms_final = nullptr;  ///< (D) final RMSNorm weights
};

/// @brief KV blocks in device memory (float32): per layer, keys and values each
/// (num_blocks * block_size, KV) floats, the layout of inferlab::HostKVPool. Shared by every
/// sequence of a batched step, each addressing it through its own block table. The runner's
/// DeviceKVPool wraps it and checks sizes and block ids (KVPool) before any call here.
class CudaKVPool {
 public:
  /// @brief Allocates and zeroes the blocks (every size >= 1).
  /// @throws inferlab::Error without a device, or when memory runs out.
  CudaKVPool(int n_layers, int kv_dim, int num_blocks, int block_size);
  ~CudaKVPool();

  int n_layers() const;      ///< L
  int kv_dim() const;        ///< KV floats per row
  int num_blocks() const;    ///< blocks
  int block_size() const;    ///< positions per block
  float* keys(int layer);    ///< device pointer to layer @p layer's key rows
  float* values(int layer);  ///< device pointer to layer @p layer's value rows
  /// @brief Floats one block holds over all layers, keys then values per layer.
  std::size_t block_floats() const;
  /// @brief Copies block @p src into block @p dst on the device (copy-on-write; both ids in
  /// [0, num_blocks), as for the two calls below).
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

/// @brief A model resident on the GPU (float32, or its matrices in Q8_0 / Q4_0 blocks): runs
/// ragged batched steps over KV blocks in a CudaKVPool.
class CudaForwardPass {
 public:
  /// @brief Validates the dimensions (ModelConfig::validate) and uploads every weight once.
  /// @param config the model's dimensions (shared_classifier is not read: a null @p weights.wcls
  ///        or one equal to token_embedding means a shared classifier, uploaded once)
  /// @param weights host pointers to every tensor, read only here: they may be freed afterwards
  /// @throws inferlab::Error for unusable dimensions, a missing weight, no CUDA device, or when
  ///         memory runs out.
  CudaForwardPass(const ModelConfig& config, const Weights& weights);
  /// @brief The same for a model stored in a block format: each matrix is uploaded as its
  /// blocks (no float copy on the device) and multiplied by matmul_quant_cuda; the embedding
  /// rows a step needs are dequantized on the device (dequantize_rows_cuda).
  /// @param config the model's dimensions
  /// @param weights host pointers to every tensor, read only here
  /// @throws inferlab::Error as the float constructor, and for a matrix stored in a type
  ///         without a CUDA kernel (Q8_0 and Q4_0 have one).
  CudaForwardPass(const ModelConfig& config, const BlockWeights& weights);
  ~CudaForwardPass();

  /// @brief A ragged batched step: every entry's tokens in one pass through the weights (one
  /// GEMM per layer over all tokens), attention per sequence through its block table into
  /// @p pool. One entry whose table is a single block is a contiguous cache, attended by the
  /// flash-decoding attention_cuda; anything else goes through paged_attention_cuda.
  /// @pre The batch is valid (inferlab::validate_batch(), which the CUDA runner calls): every
  /// entry has tokens in [0, V), its positions fit its blocks and the context (< seq_len),
  /// its block ids are in @p pool, and @p pool is this model's (n_layers, kv_dim).
  /// @param entries (n) the sequences of the step (each with its own blocks)
  /// @param n number of entries (>= 1)
  /// @param pool the KV blocks every entry's table points into
  /// @param all_logits true: one row per token (T rows), false: the last token of each entry
  /// @param host_logits (rows, V) host floats, written
  /// @return rows written
  int forward_batch(const CudaBatchEntry* entries, int n, CudaKVPool& pool, bool all_logits,
                    float* host_logits);

  /// @brief forward_batch() with the argmax of each entry's last logits row taken on the device
  /// (argmax_cuda, lowest id on a tie): only the n token ids come back (4 bytes per entry instead
  /// of 4 * V).
  /// @param entries (n) the sequences of the step, as for forward_batch()
  /// @param n number of entries (>= 1)
  /// @param pool the device KV pool every entry's blocks live in
  /// @param next_tokens (n) host ints, written
  void forward_batch_greedy(const CudaBatchEntry* entries, int n, CudaKVPool& pool,
                            int* next_tokens);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab::cuda
