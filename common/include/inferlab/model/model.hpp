#pragma once
/// @file model.hpp
/// @brief A Llama-architecture model: its configuration and its weights, loaded from a GGUF
/// file or a llama2.c legacy (version 0) checkpoint, or generated synthetically.
///
/// ModelConfig and Weights, the model's description, live in inferlab/model/model_config.hpp
/// (with the dimension letters used in shape comments), so that the CUDA forward pass takes the
/// very same structs as the CPU one.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferlab/kernels/matmul.hpp"
#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/kernels/quant_matmul.hpp"
#include "inferlab/model/model_config.hpp"
#include "inferlab/model/weight_format.hpp"

namespace inferlab {

/// @brief One linear layer's weights as the CPU forward pass reads them: float32 repacked for
/// matmul_packed (kernels::PackedMatrix, rung 3 of the float ladder), or rows kept in a block
/// format for matmul_quant (kernels::QuantMatrix). Exactly one of the two is non-empty.
struct LinearWeight {
  kernels::PackedMatrix packed;  ///< float32 storage (empty when stored)
  kernels::QuantMatrix stored;   ///< block storage (empty when float)
  /// @brief Whether the weights are kept in a block format (F16 and BF16 included).
  bool is_stored() const { return !stored.empty(); }
  /// @brief Bytes the weights hold in memory.
  std::size_t bytes() const { return is_stored() ? stored.bytes() : packed.bytes(); }
};

/// @brief The linear layers' weights as the CPU forward pass reads them: one matrix per layer
/// and tensor, and the classifier. A float model packs them on first use; for a model loaded
/// from a file, the pages of each matrix in the file's layout are then given back to the
/// system, so a CPU run holds the linear weights once; a later reader of the file's layout
/// (the CUDA upload, a benchmark) faults them in again from the file. A model whose weights
/// are stored in a block format (Model::load with LoadOptions::weights) builds them at load
/// and keeps nothing else: no float copy.
struct CpuLinears {
  std::vector<LinearWeight> wq;  ///< query projection, one per layer (D, D)
  std::vector<LinearWeight> wk;  ///< key projection, one per layer (KV, D)
  std::vector<LinearWeight> wv;  ///< value projection, one per layer (KV, D)
  std::vector<LinearWeight> wo;  ///< attention output, one per layer (D, D)
  std::vector<LinearWeight> w1;  ///< gate projection, one per layer (H, D)
  std::vector<LinearWeight> w2;  ///< down projection, one per layer (D, H)
  std::vector<LinearWeight> w3;  ///< up projection, one per layer (H, D)
  LinearWeight wcls;             ///< classifier (V, D); shares the embedding's bytes when tied
  /// @brief Bytes of all the matrices (a tied classifier stored with the embedding counted).
  std::size_t bytes() const;
};

/// @brief How Model::load() keeps the weights.
struct LoadOptions {
  /// The storage of the linear layers and the embedding table (the norms stay float32).
  WeightFormat weights = WeightFormat::file;
};

/// @brief A model: configuration plus weights, either memory-mapped from a file or owned.
class Model {
 public:
  /// @brief Memory-maps a llama2.c legacy checkpoint: 7 little-endian int32 (dim, hidden_dim,
  /// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size means the
  /// classifier is stored separately), then float32 tensors in export order.
  /// A file that starts with the GGUF magic is read as GGUF instead (whatever its name):
  /// architecture `llama`, its shapes, RoPE base and scaling and RMSNorm epsilon from the
  /// metadata, the classifier tied when `output.weight` is absent.
  /// @p options.weights chooses the storage: WeightFormat::file keeps each tensor in the
  /// file's type (a block-format GGUF tensor is copied once, as its blocks; a llama2.c file is
  /// float32), WeightFormat::f32 converts every tensor to float32 (the float reference), a
  /// block format quantizes (or converts) every linear layer and the embedding table to it.
  /// The norms are always float32. load_note() says what each tensor is stored as and its
  /// bytes per weight (empty for a llama2.c file kept as float32).
  /// @throws inferlab::Error if the file is missing, unreadable, has invalid dimensions or a
  /// size other than exactly the one its header implies; for GGUF, any problem GgufFile::open
  /// reports, an unsupported architecture (named, with the supported list), a missing key or
  /// tensor, a tensor whose shape disagrees with the metadata, or a non-finite weight (a NaN
  /// or infinite block scale included); inferlab::ParameterError on `weights` for a format
  /// whose blocks do not divide a tensor's rows, or one this build cannot store.
  static Model load(const std::string& path, const LoadOptions& options = {});

  /// @brief The model @p model with its weights stored as @p format: a float model's linear
  /// layers and embedding quantized (the float copy released), nothing done for
  /// WeightFormat::file and WeightFormat::f32.
  /// @throws inferlab::Error for a view or a model already stored in a block format;
  /// inferlab::ParameterError as load().
  static Model with_weights(Model model, WeightFormat format);

  /// @brief Builds a model from a configuration and a buffer laid out exactly like the file
  /// body (everything after the 28-byte header).
  static Model from_buffer(const ModelConfig& config, std::vector<float> body, std::string name);

  /// @brief A non-owning model made of the first @p n_layers layers of @p base followed by
  /// base's final norm and classifier: the draft of early-exit self-speculation (chapter 07).
  /// It shares base's weights (base must outlive it, and save() refuses it); a layer's
  /// weights sit at the same offsets whatever the layer count, so no copy is needed.
  /// @throws inferlab::Error if @p n_layers is outside [1, base's layer count].
  static Model first_layers_view(const Model& base, int n_layers);

  /// @brief Exact size in bytes a legacy checkpoint with this configuration has.
  static std::size_t file_size_for(const ModelConfig& config);

  /// @brief Writes the model in the legacy format (byte-identical layout to llama2.c's export).
  /// @throws inferlab::Error for a view or a model whose weights are stored in a block format.
  void save(const std::string& path) const;
  /// @brief Writes the model as a GGUF v3 file (architecture `llama`, llama.cpp's tensor
  /// names), its linear weights and embedding stored as @p type, the norms as F32; no
  /// `output.weight` when the classifier is shared. Model::load() reads it back.
  /// @param path the file to write
  /// @param type the storage of the linear weights and the embedding
  /// @param classifier the storage of a separate classifier when it differs from @p type
  ///        (llama.cpp's files often keep it in another type); unset: @p type
  /// @throws inferlab::Error for a view, a model whose weights are stored in a block format,
  /// a type whose blocks do not divide the rows, or a path that cannot be written.
  void save_gguf(const std::string& path, kernels::TensorType type = kernels::TensorType::kF32,
                 std::optional<kernels::TensorType> classifier = std::nullopt) const;
  /// @brief What loading did beyond mapping the file: what each tensor is stored as, its bytes
  /// per weight and the weights' memory. Empty for a llama2.c file or a synthetic model kept
  /// as float32.
  const std::string& load_note() const { return load_note_; }

  /// @brief The hyper-parameters (shapes) of this model.
  const ModelConfig& config() const { return config_; }
  /// @brief Pointers to every tensor; valid as long as this Model is alive (moves keep them).
  /// For a model stored in a block format (float_weights() false) only the norms are set:
  /// the linear layers are in cpu_linears(), the embedding rows come from embedding_row().
  const Weights& weights() const { return weights_; }
  /// @brief Whether weights() holds every tensor as float32 (no block-format storage).
  bool float_weights() const;
  /// @brief Token @p token's embedding row as floats (a stored row dequantized).
  /// @param token in [0, V)
  /// @param row (D) floats
  void embedding_row(int token, float* row) const;
  /// @brief The embedding table (V, D) as stored, for a reader that needs its blocks (the CUDA
  /// upload); empty for a float model, whose table is weights().token_embedding.
  const kernels::QuantMatrix& stored_embedding() const;
  /// @brief The linear weights packed for the CPU forward pass. A stored model built them at
  /// load. A float model builds them on the first call (every
  /// matrix read once; about 0.3 s for stories110M, nothing worth measuring for stories260K)
  /// and kept for the model's life. Thread-safe. A model loaded from a file then gives the
  /// mapped pages of each packed matrix back to the kernel, so the weights are not held twice;
  /// a synthetic (owned) model keeps both copies. A first_layers_view() shares its base's
  /// packed weights.
  const CpuLinears& cpu_linears() const;
  /// @brief The bytes of weights one decode step reads, as stored: every linear matrix and
  /// the classifier once (blocks for a block format; a float model's packed matrices, their
  /// padding included, so at least config().bytes_read_per_token()), the norms, and one row
  /// of the embedding table. Packs a float model's matrices if cpu_linears() has not yet.
  double bytes_read_per_token() const;
  /// @brief Where the model came from: a file path or "synthetic:NAME(seed=...)".
  const std::string& name() const { return name_; }

  /// @brief Move-only: takes over the storage (mapping or buffer); the weight pointers stay valid.
  Model(Model&&) noexcept;
  /// @brief Move assignment: releases this model's storage, then takes over the other's.
  Model& operator=(Model&&) noexcept;
  ~Model();

 private:
  Model() = default;
  static Model load_gguf(const std::string& path, const LoadOptions& options);
  static std::size_t body_floats(const ModelConfig& config);  // the file body, in floats
  float* owned_body();  // the body of a model built by from_buffer(), for a loader to fill
  struct Storage;
  struct Packed;
  void bind_weights(const float* body);
  void make_packed();
  struct StoredTensor;
  void store(const std::vector<StoredTensor>& tensors, std::vector<float> norms,
             WeightFormat format, const std::string& source);
  ModelConfig config_;
  Weights weights_;
  std::string name_;
  std::string load_note_;
  std::unique_ptr<Storage> storage_;
  std::shared_ptr<Packed> packed_;  // shared with views of this model
};

/// @brief Named real shapes the synthetic generator and the calculators share.
/// Known names: stories260K, stories15M, stories42M, stories110M, llama2-7b, llama3-8b,
/// llama3-70b, mistral-7b (v0.2: 32K context, no sliding window), smollm2-135m (the shape of
/// SmolLM2-135M-Instruct's GGUF file, for the calculators).
/// @throws inferlab::Error for an unknown name (the message lists the known ones).
ModelConfig named_config(const std::string& name);
/// @brief The names accepted by named_config().
std::vector<std::string> named_config_names();

/// @brief Options for make_synthetic_model().
struct SyntheticOptions {
  std::uint64_t seed = 1234;  ///< same seed and shape give bit-identical weights
  int max_layers = 0;         ///< keep only the first N layers (0 = all)
  int seq_len = 0;            ///< override the context length (0 = the shape's)
  WeightFormat weights = WeightFormat::file;  ///< storage (file = f32: the generated floats)
};

/// @brief A deterministic random-weight model of a named real shape. Linear weights are uniform
/// in +-1/sqrt(in) (so activations keep their scale through the layers), norms are 1.
Model make_synthetic_model(const std::string& shape, const SyntheticOptions& options = {});
/// @brief The same for an explicit configuration.
Model make_synthetic_model(const ModelConfig& config, const SyntheticOptions& options,
                           const std::string& name);

}  // namespace inferlab
