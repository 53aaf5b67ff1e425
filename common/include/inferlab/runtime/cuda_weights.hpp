#pragma once
/// @file cuda_weights.hpp
/// @brief Which weight storage the CUDA forward pass runs: a float32 model, or a model whose
/// linear layers, classifier and embedding table are all Q8_0 or Q4_0 blocks (the types with a
/// `dp4a` kernel, kernels/cuda/quant_matmul.cu); the norms are float32 in both.
///
/// Host code, so that a format the GPU cannot run is refused the same way on a machine with or
/// without one: the app checks a `--weights` name before loading and the loaded model after;
/// the CUDA runner checks the model again before uploading it.

#include <string>

#include "inferlab/kernels/quant_formats.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/weight_format.hpp"

namespace inferlab {

/// @brief Whether the CUDA forward pass runs a block-format tensor stored as @p type (Q8_0
/// and Q4_0; a float32 tensor only in a float32 model).
bool cuda_runs_tensor_type(kernels::TensorType type);

/// @brief The storage the CUDA backend runs, as one phrase for messages:
/// "the CUDA backend runs f32, q8_0 and q4_0 weights".
std::string cuda_weight_formats();

/// @brief Refuses, before loading, a `--weights` format the CUDA forward pass cannot run
/// (f16, q4_1, q5_0, q5_1, q4_k, q6_k); file and f32 pass (a file's own types are checked once
/// loaded, by cuda_weights_problem()).
/// @throws inferlab::ParameterError on parameter `weights`, naming the format and listing
/// what the CUDA backend runs.
void require_cuda_weight_format(WeightFormat format);

/// @brief Why the CUDA forward pass cannot run @p model's weights: the first tensor (in the
/// order embedding, layers, classifier) stored in a type it does not run, named with its type
/// and what the CUDA backend runs; empty when it runs them all (every float32 model).
std::string cuda_weights_problem(const Model& model);

}  // namespace inferlab
