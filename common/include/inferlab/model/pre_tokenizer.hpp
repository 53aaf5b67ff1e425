#pragma once
/// @file pre_tokenizer.hpp
/// @brief The pre-tokenizer of byte-level BPE vocabularies: the regular expressions that cut a
/// text into words before any merge, chosen by the GGUF key `tokenizer.ggml.pre`.
///
/// BPE never merges across a word boundary, so the split decides, for example, that " world"
/// is one word (space included) and that "2024" is four digits in SmolLM2 but at most three in
/// Llama 3. The expressions use Unicode categories (`\p{L}` letters, `\p{N}` numbers, `\p{P}`
/// punctuation, `\s` white space), matched by PCRE2 with its UTF and UCP options, so the
/// categories come from PCRE2's Unicode tables, not from a table of our own.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab {

/// @brief A compiled pre-tokenizer: one or more regular expressions applied in turn. Each one
/// cuts every piece the previous ones produced: its matches and the text between them both
/// become pieces, and no match crosses a piece boundary.
class PreTokenizer {
 public:
  /// @brief The pre-tokenizer named @p name (a `tokenizer.ggml.pre` value).
  /// @throws inferlab::Error naming @p name and the supported names if it is not one of them.
  static PreTokenizer named(const std::string& name);

  /// @brief A pre-tokenizer from explicit PCRE2 patterns, applied in order (for tests and for
  /// vocabularies that bring their own expressions).
  /// @throws inferlab::Error if a pattern does not compile (with PCRE2's message and offset).
  static PreTokenizer from_patterns(const std::vector<std::string>& patterns);

  /// @brief The names named() accepts, in the order the error message lists them.
  static const std::vector<std::string>& supported_names();

  /// @brief Cuts @p text into words; their concatenation is @p text. Bytes that are not valid
  /// UTF-8 match no category and end up in words of their own kind (between matches).
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;  // shared: compiled code is read-only when matching
};

}  // namespace inferlab
