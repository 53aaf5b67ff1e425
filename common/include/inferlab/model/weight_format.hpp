#pragma once
/// @file weight_format.hpp
/// @brief The storage a model's weights are kept in once loaded (`--weights`): the file's own
/// types, or one format for every linear layer and the embedding table (the norms stay float).

#include <optional>
#include <string>
#include <vector>

#include "inferlab/kernels/quant_formats.hpp"

namespace inferlab {

/// @brief How the weights are stored in memory after loading.
enum class WeightFormat {
  file,  ///< each tensor as the file stores it (a llama2.c file: float32)
  f32,   ///< float32: every tensor converted at load (the float reference)
  f16,   ///< IEEE half
  q8_0,  ///< 8-bit blocks of 32 (1.0625 bytes per weight)
  q4_0,  ///< 4-bit blocks of 32 with a scale (0.5625 bytes per weight)
  q4_1,  ///< 4-bit blocks of 32 with a scale and a minimum (0.625 bytes per weight)
  q4_k,  ///< 4-bit super-blocks of 256 (llama.cpp's Q4_K, 0.5625 bytes per weight)
  q6_k,  ///< 6-bit super-blocks of 256 (llama.cpp's Q6_K, 0.8203125 bytes per weight)
  q5_0,  ///< 5-bit blocks of 32 with a scale (0.6875 bytes per weight)
  q5_1   ///< 5-bit blocks of 32 with a scale and a minimum (0.75 bytes per weight)
};

/// @brief The name of @p format as `--weights` spells it: "file", "f32", "q8_0", ...
const char* weight_format_name(WeightFormat format);
/// @brief Every format's name, in the enum's order.
std::vector<std::string> weight_format_names();
/// @brief The format named @p name (weight_format_name()'s spelling).
/// @throws inferlab::ParameterError on parameter `weights` for an unknown name (the message
/// lists the known ones).
WeightFormat parse_weight_format(const std::string& name);
/// @brief The tensor type a format stores the linear layers as; none for WeightFormat::file.
std::optional<kernels::TensorType> weight_format_type(WeightFormat format);

}  // namespace inferlab
