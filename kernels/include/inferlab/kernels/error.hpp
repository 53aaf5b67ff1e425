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

/// @brief @p text with every NUL byte written as two characters, a backslash and `0`: what()
/// returns a C string, so a NUL quoted from an input (a file's bytes) would otherwise end the
/// message there and hide the rest of it.
/// @param text a message, possibly holding NUL bytes
/// @return the same message without NUL bytes
inline std::string visible_nul(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\0')
      out += "\\0";
    else
      out += c;
  }
  return out;
}

/// @brief Raised for every user-facing error: a bad model file, an invalid sampling parameter,
/// a prompt longer than the context. The message names the thing and the problem, so a chapter
/// can print it as it is and exit non-zero. A NUL byte in the message is kept visible
/// (visible_nul()), with the text after it.
class Error : public std::runtime_error {
 public:
  /// @param message what went wrong, naming the thing and the problem
  explicit Error(const std::string& message) : std::runtime_error(visible_nul(message)) {}
  /// @param message what went wrong, naming the thing and the problem
  explicit Error(const char* message) : std::runtime_error(message) {}
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
      : Error(parameter + " " + problem),
        parameter_(std::move(parameter)),
        problem_(visible_nul(problem)) {}
  /// @brief The parameter's name in the core.
  const std::string& parameter() const { return parameter_; }
  /// @brief The message without the parameter's name.
  const std::string& problem() const { return problem_; }

 private:
  std::string parameter_;
  std::string problem_;
};

}  // namespace inferlab
