#pragma once
/// @file transformer.hpp
/// @brief The Llama-2 forward pass on the GPU: weights uploaded once, a device KV cache for one
/// sequence, and the best version of every kernel. The same order of operations as the CPU
/// inferlab::ForwardPass (common/src/forward.cpp), so the two can be compared logit by logit.
///
/// Plain C++ header (no CUDA types): the implementation lives behind a pointer.

#include <cstddef>
#include <memory>

namespace inferlab::cuda {

/// @brief Dimensions and host weight pointers of a model (the fields of inferlab::ModelConfig
/// and inferlab::Weights, repeated here so that the kernels library does not depend on the
/// core). Dimension letters as in docs/notation.md. The pointers are read only by the
/// CudaTransformer constructor.
struct CudaModelDesc {
  int dim = 0;         ///< D
  int hidden_dim = 0;  ///< H
  int n_layers = 0;    ///< L
  int n_heads = 0;     ///< Nh
  int n_kv_heads = 0;  ///< Nkv
  int vocab_size = 0;  ///< V
  int seq_len = 0;     ///< S: the capacity of the device KV cache
  float rope_theta = 10000.0f;  ///< RoPE base
  float norm_eps = 1e-5f;       ///< RMSNorm epsilon
  const float* token_embedding = nullptr;  ///< (V, D)
  const float* rms_att = nullptr;          ///< (L, D)
  const float* wq = nullptr;               ///< (L, D, D)
  const float* wk = nullptr;               ///< (L, KV, D)
  const float* wv = nullptr;               ///< (L, KV, D)
  const float* wo = nullptr;               ///< (L, D, D)
  const float* rms_ffn = nullptr;          ///< (L, D)
  const float* w1 = nullptr;               ///< (L, H, D)
  const float* w2 = nullptr;               ///< (L, D, H)
  const float* w3 = nullptr;               ///< (L, H, D)
  const float* rms_final = nullptr;        ///< (D)
  const float* wcls = nullptr;             ///< (V, D); == token_embedding when shared (uploaded once)
};

/// @brief A model resident on the GPU with the KV cache of one sequence.
class CudaTransformer {
 public:
  /// @brief Validates the dimensions, uploads every weight once and allocates the KV cache
  /// (2 * L * S * KV floats).
  /// @throws std::invalid_argument for unusable dimensions or missing weights,
  ///         std::runtime_error when there is no CUDA device or memory runs out.
  explicit CudaTransformer(const CudaModelDesc& desc);
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

  /// @brief Like forward() for the last token only, but the argmax is taken on the device and
  /// only the token id comes back (4 bytes instead of 4*V).
  int forward_greedy(const int* tokens, int T, int start_pos);

  /// @brief Like forward_greedy() with top-p sampling on the device (see sampling_cuda.hpp for
  /// the exact rule); @p u is the uniform draw in [0, 1) supplied by the caller's RNG.
  int forward_top_p(const int* tokens, int T, int start_pos, float temperature, float top_p,
                    float u);

  /// @brief Empties the KV cache (a new sequence starts at position 0).
  void reset();
  /// @brief Positions held by the KV cache.
  int length() const;
  /// @brief The dimensions (weight pointers cleared: they are not kept).
  const CudaModelDesc& desc() const;
  /// @brief Bytes of device memory held by the weights.
  std::size_t weight_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab::cuda
