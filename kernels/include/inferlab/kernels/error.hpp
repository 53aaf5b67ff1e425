#pragma once
/// @file error.hpp
/// @brief The one exception type InferLab throws for bad input (files, parameters, prompts).
///
/// It is defined here, in the lowest layer, so that the kernels' own checks (an unknown number
/// format, a KV storage type that is not implemented) throw the same type as the core;
/// inferlab/base/error.hpp, which the core includes, is this header.

#include <stdexcept>
#include <string>

namespace inferlab {

/// @brief Raised for every user-facing error: a bad model file, an invalid sampling parameter,
/// a prompt longer than the context. The message names the thing and the problem, so a chapter
/// can print it as it is and exit non-zero.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace inferlab
