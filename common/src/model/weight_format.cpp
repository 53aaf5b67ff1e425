// The weight storage choice (--weights): names and tensor types.
#include "inferlab/model/weight_format.hpp"

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

// ggml's numbers for the K-quant types (quant_formats.hpp names the types it reads).
constexpr std::uint32_t kGgmlQ4_K = 12, kGgmlQ6_K = 14;

constexpr WeightFormat kFormats[] = {WeightFormat::file, WeightFormat::f32,  WeightFormat::f16,
                                     WeightFormat::q8_0, WeightFormat::q4_0, WeightFormat::q4_1,
                                     WeightFormat::q4_k, WeightFormat::q6_k, WeightFormat::q5_0,
                                     WeightFormat::q5_1};

}  // namespace

const char* weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::file:
      return "file";
    case WeightFormat::f32:
      return "f32";
    case WeightFormat::f16:
      return "f16";
    case WeightFormat::q8_0:
      return "q8_0";
    case WeightFormat::q4_0:
      return "q4_0";
    case WeightFormat::q4_1:
      return "q4_1";
    case WeightFormat::q4_k:
      return "q4_k";
    case WeightFormat::q6_k:
      return "q6_k";
    case WeightFormat::q5_0:
      return "q5_0";
    case WeightFormat::q5_1:
      return "q5_1";
  }
  return "?";
}

std::vector<std::string> weight_format_names() {
  std::vector<std::string> names;
  for (WeightFormat f : kFormats) names.emplace_back(weight_format_name(f));
  return names;
}

WeightFormat parse_weight_format(const std::string& name) {
  for (WeightFormat f : kFormats)
    if (name == weight_format_name(f)) return f;
  throw ParameterError("weights", fmt::format("{}: unknown weight format (known: {})", name,
                                              fmt::join(weight_format_names(), ", ")));
}

std::optional<kernels::TensorType> weight_format_type(WeightFormat format) {
  using kernels::TensorType;
  switch (format) {
    case WeightFormat::file:
      return std::nullopt;
    case WeightFormat::f32:
      return TensorType::kF32;
    case WeightFormat::f16:
      return TensorType::kF16;
    case WeightFormat::q8_0:
      return TensorType::kQ8_0;
    case WeightFormat::q4_0:
      return TensorType::kQ4_0;
    case WeightFormat::q4_1:
      return TensorType::kQ4_1;
    case WeightFormat::q4_k:
      return TensorType(kGgmlQ4_K);
    case WeightFormat::q6_k:
      return TensorType(kGgmlQ6_K);
    case WeightFormat::q5_0:
      return TensorType::kQ5_0;
    case WeightFormat::q5_1:
      return TensorType::kQ5_1;
  }
  return std::nullopt;
}

}  // namespace inferlab
