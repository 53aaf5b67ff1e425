#pragma once
// What the constraint compilers' fuzz targets share (one target per language, each fuzzed for
// its own time): compile arbitrary text. Malformed input must be refused with inferlab::Error;
// what compiles must give, from its initial state and from the state after the first few
// bytes of the input, the same mask by the fast trie walk as by the brute-force oracle.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "inferlab/base/error.hpp"
#include "inferlab/constrain/constraint.hpp"

namespace inferlab::fuzz {

// A small vocabulary: every byte 0x20..0x7E alone, and a few multi-byte pieces that cross JSON
// and regex token boundaries.
inline const std::vector<std::string>& constraint_vocabulary() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> t = {"<eos>"};
    for (int c = 0x20; c < 0x7f; ++c) t.emplace_back(1, char(c));
    for (const char* s :
         {"\"}", "\"},", "{\"", "\":", "true", "null", "ab", "aa", "12", "\\n", "  ", "\xc3\xa9"})
      t.emplace_back(s);
    return t;
  }();
  return v;
}

// Compiles @p data as @p kind and checks the masks (see the top of this file).
inline int fuzz_constraint(ConstraintKind kind, const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Grammar grammar = compile_constraint(kind, text, "fuzz");
    PushdownParser parser(grammar);
    const std::vector<std::string>& tokens = constraint_vocabulary();
    static const TokenTrie trie(tokens);
    MaskComputer masks(parser, trie, tokens, /*eos_token=*/0);
    int state = parser.initial_state();
    // The initial state, then the states reached by the input's own first bytes.
    for (std::size_t i = 0;; ++i) {
      if (!(masks.mask(state) == masks.oracle_mask(state))) std::abort();
      if (i >= 3 || i >= text.size()) break;
      state = parser.advance(state, std::string_view(&text[i], 1));
      if (state == PushdownParser::kDead) break;
    }
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace inferlab::fuzz
