#pragma once
/// @file model_storage.hpp
/// @brief The private parts of Model that its source files share: the storage behind the weight
/// pointers, the linear weights as the CPU reads them, and a matrix to be stored.
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "inferlab/model/model.hpp"
#include "mapped_file.hpp"

namespace inferlab {

/// @brief What the weight pointers point into.
struct Model::Storage {
  std::optional<MappedFile> map;  ///< the mapped file, or
  std::vector<float> owned;       ///< an owned body (synthetic models, GGUF files), or
  std::vector<float> norms;       ///< the norms of a stored model: rms_att, rms_ffn, rms_final
};

/// @brief The linear weights of a model (and of its views) as the CPU reads them: a float
/// model's packed once, on first use; a stored model's built at load, with its embedding table.
struct Model::Packed {
  ModelConfig config;              ///< the full model's, whose every layer is packed
  Weights weights;                 ///< the full model's weight pointers
  std::once_flag once;             ///< packs a float model's linears on first use
  CpuLinears linears;              ///< the linears, packed float or stored
  bool file_backed = false;        ///< weights point into a read-only file mapping (Model::load)
  kernels::QuantMatrix embedding;  ///< (V, D) of a stored model; empty for a float model
};

/// @brief One matrix of a float model, or of a file, to be stored: where it is, as what.
struct Model::StoredTensor {
  std::string name;              ///< for messages
  kernels::TensorType type;      ///< its type at data
  const void* data;              ///< (d, n) in that type
  int n;                         ///< input features
  int d;                         ///< output features
  kernels::TensorType target;    ///< the type to keep it as
  const float* Weights::*field;  ///< which tensor (token_embedding, wq, ..., wcls)
  int layer;                     ///< for the per-layer ones
};

}  // namespace inferlab
