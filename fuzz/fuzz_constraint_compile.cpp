// Fuzz target: the constraint compilers (regex, GBNF, JSON Schema) on arbitrary text. The first
// byte picks the language, the rest is the source. Malformed input must be refused with
// inferlab::Error; what compiles must give, from its initial state and from the state after the
// first few bytes of the input, the same mask by the fast trie walk as by the brute-force oracle.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "inferlab/constrain/constraint.hpp"
#include "inferlab/base/error.hpp"

namespace {

// A small vocabulary: every byte 0x20..0x7E alone, and a few multi-byte pieces that cross JSON
// and regex token boundaries.
const std::vector<std::string>& vocabulary() {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  using inferlab::ConstraintKind;
  const ConstraintKind kinds[] = {ConstraintKind::regex, ConstraintKind::gbnf,
                                  ConstraintKind::json_schema};
  const ConstraintKind kind = kinds[data[0] % 3];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const inferlab::Grammar grammar = inferlab::compile_constraint(kind, text, "fuzz");
    inferlab::PushdownParser parser(grammar);
    const std::vector<std::string>& tokens = vocabulary();
    static const inferlab::TokenTrie trie(tokens);
    inferlab::MaskComputer masks(parser, trie, tokens, /*eos_token=*/0);
    int state = parser.initial_state();
    // The initial state, then the states reached by the input's own first bytes.
    for (std::size_t i = 0;; ++i) {
      if (!(masks.mask(state) == masks.oracle_mask(state))) std::abort();
      if (i >= 3 || i >= text.size()) break;
      state = parser.advance(state, std::string_view(&text[i], 1));
      if (state == inferlab::PushdownParser::kDead) break;
    }
  } catch (const inferlab::Error&) {
  }
  return 0;
}
