// Which weight storage the CUDA forward pass runs (cuda_weights.hpp): the checks the app makes
// before and after loading and the CUDA runner makes before uploading.
#include "inferlab/runtime/cuda_weights.hpp"

#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace k = kernels;

bool cuda_runs_tensor_type(k::TensorType type) {
  return type == k::TensorType::kQ8_0 || type == k::TensorType::kQ4_0;
}

std::string cuda_weight_formats() { return "the CUDA backend runs f32, q8_0 and q4_0 weights"; }

void require_cuda_weight_format(WeightFormat format) {
  const std::optional<k::TensorType> type = weight_format_type(format);
  if (!type || *type == k::TensorType::kF32 || cuda_runs_tensor_type(*type)) return;
  throw ParameterError(
      "weights", fmt::format("{}: no CUDA kernel for {} weights ({})", weight_format_name(format),
                             k::ggml_type_name(std::uint32_t(*type)), cuda_weight_formats()));
}

std::string cuda_weights_problem(const Model& model) {
  if (model.float_weights()) return "";
  // A float32 tensor kept beside blocks is packed for the CPU (no row-major copy to upload).
  auto problem = [](const std::string& name, k::TensorType type) -> std::string {
    if (cuda_runs_tensor_type(type)) return "";
    const std::string why = type == k::TensorType::kF32
                                ? "the CUDA pass runs F32 tensors in a float32 model only"
                                : "no CUDA kernel for it";
    return fmt::format("tensor '{}' is stored as {}: {} ({})", name,
                       k::ggml_type_name(std::uint32_t(type)), why, cuda_weight_formats());
  };
  auto type_of = [](const LinearWeight& w) {
    return w.is_stored() ? w.stored.type() : k::TensorType::kF32;
  };
  std::string why = problem("token_embedding", model.stored_embedding().type());
  const CpuLinears& l = model.cpu_linears();
  const std::pair<const char*, const std::vector<LinearWeight>*> lists[] = {
      {"wq", &l.wq}, {"wk", &l.wk}, {"wv", &l.wv}, {"wo", &l.wo},
      {"w1", &l.w1}, {"w2", &l.w2}, {"w3", &l.w3}};
  for (int layer = 0; why.empty() && layer < model.config().n_layers; ++layer) {
    for (const auto& [name, list] : lists) {
      const LinearWeight& w = (*list)[std::size_t(layer)];
      why = problem(fmt::format("{} (layer {})", name, layer), type_of(w));
      if (!why.empty()) break;
    }
  }
  if (why.empty() && !model.config().shared_classifier) why = problem("wcls", type_of(l.wcls));
  return why;
}

}  // namespace inferlab
