/// @file pre_tokenizer.cpp
/// @brief The pre-tokenizer splits of byte-level BPE vocabularies, matched with PCRE2.
///
/// The expressions are the ones the models' own `tokenizer.json` files give (the same ones
/// llama.cpp uses for each `tokenizer.ggml.pre` value). Where a `tokenizer.json` has a
/// case-insensitive group `(?i:'s|'t|...)`, it is written out as `'[sS]|'[tT]|...`: with
/// Unicode case folding `(?i)` would also let 'ſ' (long s) match 's'.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "inferlab/model/pre_tokenizer.hpp"

#include <pcre2.h>

#include <map>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

// GPT-2's split: English contractions, a letter run or a number run or a run of other symbols
// (each with at most one leading space), then white space, the last space of a run left to
// start the next word (`\s+(?!\S)`).
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3 (tiktoken's cl100k split): contractions in either case, a letter run with one
// leading non-letter, numbers in groups of at most three digits, symbol runs that keep their
// trailing newlines, newline runs with the white space before them.
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: Llama 3's split with every digit a word of its own.
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

/// The supported names and their expressions, applied in order.
const std::map<std::string, std::vector<std::string>>& named_patterns() {
  static const std::map<std::string, std::vector<std::string>> patterns = {
      {"gpt-2", {kGpt2}},
      {"llama-bpe", {kLlama3}},
      {"qwen2", {kQwen2}},
      // SmolLM2 (StarCoder's tokenizer): every digit alone, then GPT-2's split.
      {"smollm", {R"(\p{N})", kGpt2}},
      // DeepSeek Coder: newlines alone, letter runs and punctuation runs with one optional
      // leading white space, CJK runs, single digits.
      {"deepseek-coder",
       {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
        R"(\p{N})"}},
  };
  return patterns;
}

}  // namespace

struct PreTokenizer::Compiled {
  std::vector<pcre2_code*> codes;
  Compiled() = default;
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;
  ~Compiled() {
    for (pcre2_code* code : codes) pcre2_code_free(code);
  }
};

const std::vector<std::string>& PreTokenizer::supported_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, patterns] : named_patterns()) out.push_back(name);
    return out;
  }();
  return names;
}

PreTokenizer PreTokenizer::named(const std::string& name) {
  const auto it = named_patterns().find(name);
  if (it == named_patterns().end()) {
    throw Error(fmt::format("unsupported pre-tokenizer '{}' (tokenizer.ggml.pre); supported: {}",
                            name, fmt::join(supported_names(), ", ")));
  }
  return from_patterns(it->second);
}

PreTokenizer PreTokenizer::from_patterns(const std::vector<std::string>& patterns) {
  auto compiled = std::make_shared<Compiled>();
  for (const std::string& pattern : patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    // UTF: the pattern and the text are UTF-8; UCP: \s, \d, \w and the POSIX classes use the
    // Unicode properties; MATCH_INVALID_UTF: invalid bytes in the text simply match nothing.
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      throw Error(fmt::format("pre-tokenizer pattern '{}' does not compile at offset {}: {}",
                              pattern, offset, reinterpret_cast<const char*>(message)));
    }
    compiled->codes.push_back(code);
  }
  PreTokenizer p;
  p.compiled_ = std::move(compiled);
  return p;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (!text.empty()) pieces.push_back(text);
  for (const pcre2_code* code : compiled_->codes) {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
    std::vector<std::string_view> next;
    for (const std::string_view piece : pieces) {
      // The piece is the whole subject: a lookahead such as (?!\S) sees its end, not the text
      // after it, so no match crosses the boundary an earlier expression made.
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      std::size_t start = 0, gap = 0;  // next search position; start of the unmatched text
      while (start < piece.size()) {
        const int rc = pcre2_match(code, subject, piece.size(), start, 0, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw Error(fmt::format("pre-tokenizer: PCRE2 match error {}", rc));
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        const std::size_t begin = ovector[0], end = ovector[1];
        if (end == begin) {  // an empty match cuts nothing: search again one byte on
          ++start;
          continue;
        }
        if (begin > gap) next.push_back(piece.substr(gap, begin - gap));
        next.push_back(piece.substr(begin, end - begin));
        start = gap = end;
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace inferlab
