#pragma once
/// @file model_files.hpp
/// @brief Finding model and tokenizer files: --model, then $INFERLAB_MODELS, then models/.

#include <string>

namespace inferlab {

/// @brief The default model chapters run.
inline constexpr const char* kDefaultModel = "stories260K.bin";

/// @brief The short name `--model smollm2` stands for (scripts/download_models.sh --smollm2).
inline constexpr const char* kSmolLM2Model = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// @brief Resolves a model file. @p requested may be empty (use the default name), a path, a
/// bare file name looked up in $INFERLAB_MODELS, then in the repository's models/ folder, or
/// the short name `smollm2` (kSmolLM2Model), looked up the same way.
/// @param requested the name or path asked for ("" for the default model)
/// @param parameter the parameter that asked for it (`model`, or `draft` for a draft model),
///        which a ParameterError names
/// @throws inferlab::ParameterError listing the places searched and how to get a model (the
/// download script, or random weights of stories260K's shape).
std::string find_model(const std::string& requested, const std::string& parameter = "model");

/// @brief Resolves the tokenizer for a model: @p requested if given, else the file matching the
/// vocabulary (tok512.bin for V = 512, tokenizer.bin for V = 32000) next to the model, then in
/// the same search path as find_model(). Returns "" when none is found.
std::string find_tokenizer(const std::string& requested, const std::string& model_path,
                           int vocab_size);

/// @brief The search path, for messages: each directory that find_model() looks in.
std::string model_search_path_description();

}  // namespace inferlab
