#pragma once
/// @file error.hpp
/// @brief The one exception type InferLab throws for bad input (files, parameters, prompts).
///
/// It is defined here, in the lowest layer, so that the kernels' own checks (an unknown number
/// format, a shape that does not fit) throw the same type as the core;
/// inferlab/base/error.hpp, which the core includes, is this header.

#include <stdexcept>
#include <string>
#include <utility>

namespace inferlab {

/// @brief Raised for every user-facing error: a bad model file, an invalid sampling parameter,
/// a prompt longer than the context. The message names the thing and the problem, so a chapter
/// can print it as it is and exit non-zero.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief A parameter's value is outside its limit. The core names the parameter as the code
/// does (`block_size`) and says what is wrong; it does not know which command-line flag set
/// it. The app layer does: it prints the error as that flag (`--block-size 0: must be >= 1`),
/// see inferlab::flag_error_message() in app/cli_checks.hpp.
class ParameterError : public Error {
 public:
  /// @param parameter the parameter's name in the core, snake_case (`block_size`, `k`)
  /// @param problem what is wrong, starting with the value when there is one
  ///        (`"0: must be >= 1"`)
  ParameterError(std::string parameter, const std::string& problem)
      : Error(parameter + " " + problem), parameter_(std::move(parameter)), problem_(problem) {}
  /// @brief The parameter's name in the core.
  const std::string& parameter() const { return parameter_; }
  /// @brief The message without the parameter's name.
  const std::string& problem() const { return problem_; }

 private:
  std::string parameter_;
  std::string problem_;
};

}  // namespace inferlab
