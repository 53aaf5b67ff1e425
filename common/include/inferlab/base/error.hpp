#pragma once
/// @file error.hpp
/// @brief The one exception type the core throws for bad input (files, parameters, prompts).

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
