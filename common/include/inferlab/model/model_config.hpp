#pragma once
/// @file model_config.hpp
/// @brief The description of a Llama-2-architecture model that both forward passes take: its
/// hyper-parameters (ModelConfig) and pointers to its weights (Weights). The CPU pass
/// (inferlab::ForwardPass) and the CUDA one (inferlab::cuda::CudaForwardPass) read the same
/// structs, so a new field is added once. Plain C++17 (no Eigen, no fmt): nvcc compiles it too.
///
/// Dimension letters used in shape comments throughout InferLab:
///  - `L` layers, `D` model dim, `H` hidden (FFN) dim, `V` vocabulary size,
///  - `Nh` query heads, `Nkv` key/value heads, `hs` head size (D / Nh unless the model gives
///    its own), `Q` = Nh * hs, `KV` = Nkv * hs,
///  - `S` maximum sequence length, `T` tokens in one forward call.
/// Every matrix is row-major and stored (out, in): a linear layer computes y = W x.

#include <cstddef>
#include <string>
#include <vector>

namespace inferlab {

/// @brief How RoPE frequencies are stretched for contexts longer than the training one.
enum class RopeScaling {
  none,    ///< inv_freq_j = theta^(-2j/hs), the llama2.c rule
  linear,  ///< every frequency divided by rope_factor (positions compressed by the factor)
  llama3   ///< Llama 3.1's rule: low frequencies divided by rope_factor, high ones kept, a
           ///< smooth blend between (rope_low_freq_factor, rope_high_freq_factor,
           ///< rope_original_context)
};

/// @brief The hyper-parameters of a Llama-2-style transformer.
struct ModelConfig {
  int dim = 0;                    ///< D: width of the residual stream
  int hidden_dim = 0;             ///< H: width of the SwiGLU feed-forward layer
  int n_layers = 0;               ///< L
  int n_heads = 0;                ///< Nh: query heads
  int n_kv_heads = 0;             ///< Nkv: key/value heads (GQA when < Nh)
  int vocab_size = 0;             ///< V
  int seq_len = 0;                ///< S: the longest sequence the model supports
  bool shared_classifier = true;  ///< the classifier reuses the token embedding table
  float rope_theta = 10000.0f;    ///< RoPE base (10000 in the llama2.c format; not stored in it)
  float norm_eps = 1e-5f;         ///< RMSNorm epsilon
  RopeScaling rope_scaling = RopeScaling::none;  ///< frequency rule (none in llama2.c files)
  float rope_factor = 1.0f;                      ///< linear and llama3: the context stretch factor
  float rope_low_freq_factor = 1.0f;   ///< llama3: wavelengths above original/this are scaled
  float rope_high_freq_factor = 4.0f;  ///< llama3: wavelengths below original/this are kept
  int rope_original_context = 8192;    ///< llama3: the context the model was trained at
  /// hs when the model gives its own (GGUF `attention.key_length`), which may differ from
  /// D / Nh; 0: D / Nh, the only width llama2.c's format can describe.
  int head_dim = 0;
  /// (hs/2) per-frequency RoPE divisors (GGUF tensor `rope_freqs.weight`, as Llama 3.1's files
  /// carry their frequency rule): pair j turns by pos * inv_freq_j / rope_freq_factors[j].
  /// Empty: none.
  std::vector<float> rope_freq_factors;

  int head_size() const { return head_dim > 0 ? head_dim : dim / n_heads; }  ///< hs
  int q_dim() const { return n_heads * head_size(); }  ///< Q: width of the queries
  int kv_dim() const { return n_kv_heads * head_size(); }  ///< KV
  int kv_group() const { return n_heads / n_kv_heads; }    ///< query heads per KV head
  /// @brief The hs/2 RoPE inverse frequencies, pair j rotating by pos * inv_freq[j]:
  /// theta^(-2j/hs), then the scaling rule, then the per-frequency factors. Defined in
  /// common/src/model/model.cpp.
  std::vector<float> rope_inv_freq() const;
  // The three functions below are defined in common/src/model/model.cpp, next to the checkpoint
  // layout they count.
  /// @brief Number of float32 parameters the model holds (embedding counted once if shared).
  std::size_t n_params() const;
  /// @brief Bytes of weights one token's forward pass reads (every matrix once, the embedding
  /// row only): the quantity that bounds batch-1 decode on a memory-bound machine.
  std::size_t bytes_read_per_token() const;
  /// @brief Throws inferlab::Error naming @p source if the configuration is unusable.
  void validate(const std::string& source) const;
};

/// @brief Pointers into the weight storage, one per tensor, with their shapes.
struct Weights {
  const float* token_embedding = nullptr;  ///< (V, D)
  const float* rms_att = nullptr;          ///< (L, D)
  const float* wq = nullptr;               ///< (L, Q, D)   out = Nh*hs, in = D
  const float* wk = nullptr;               ///< (L, KV, D)
  const float* wv = nullptr;               ///< (L, KV, D)
  const float* wo = nullptr;               ///< (L, D, Q)
  const float* rms_ffn = nullptr;          ///< (L, D)
  const float* w1 = nullptr;               ///< (L, H, D)   gate projection
  const float* w2 = nullptr;               ///< (L, D, H)   down projection
  const float* w3 = nullptr;               ///< (L, H, D)   up projection
  const float* rms_final = nullptr;        ///< (D)
  const float* wcls = nullptr;             ///< (V, D)      == token_embedding when shared
};

}  // namespace inferlab
