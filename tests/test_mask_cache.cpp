// The per-position mask cache (MaskComputer's frame masks) is exact: on random walks through
// grammars with called rules (object members, nested values, alternatives, GBNF rules), the
// mask of every state reached equals the brute-force oracle's, bit for bit, while the frame
// masks are reused across contexts (the same member after other members).
#include <algorithm>
#include <random>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "inferlab/constrain/gbnf.hpp"
#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/token_mask.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

// Walks `walks` random paths of at most `steps` tokens from the initial state, each token
// drawn among the allowed ones, and checks the mask of every distinct state reached against
// the oracle. Returns the number of states checked.
int random_walks_match_oracle(PushdownParser& parser, MaskComputer& masks,
                              const std::vector<std::string>& bytes, int walks, int steps,
                              unsigned seed) {
  std::mt19937 rng(seed);
  std::set<int> seen;
  for (int w = 0; w < walks; ++w) {
    int state = parser.initial_state();
    for (int i = 0; i < steps && parser.can_continue(state); ++i) {
      const TokenMask& m = masks.mask(state);
      if (seen.insert(state).second) {
        INFO("walk " << w << ", step " << i);
        REQUIRE(m == masks.oracle_mask(state));
      }
      // Tokens that are only whitespace would fill a walk, and most of them are allowed
      // between JSON values: left out while there is another choice.
      std::vector<int> allowed, spaces;
      for (int t = 0; t < static_cast<int>(bytes.size()); ++t) {
        const std::string& b = bytes[static_cast<std::size_t>(t)];
        if (!m.allowed(t) || b.empty()) continue;
        (b.find_first_not_of(" \t\n\r") == std::string::npos ? spaces : allowed).push_back(t);
      }
      if (allowed.empty()) allowed = spaces;
      if (allowed.empty()) break;
      // A token that ends the sentence is taken only when three draws all end it.
      int next = PushdownParser::kDead;
      for (int draw = 0; draw < 3; ++draw) {
        std::uniform_int_distribution<std::size_t> pick(0, allowed.size() - 1);
        const std::size_t k = pick(rng);
        next = parser.advance(state, bytes[static_cast<std::size_t>(allowed[k])]);
        REQUIRE(next != PushdownParser::kDead);  // an allowed token keeps the parse alive
        if (parser.can_continue(next)) break;
      }
      state = next;
    }
  }
  return static_cast<int>(seen.size());
}

}  // namespace

TEST_CASE("frame masks: random walks match the oracle on objects, nesting and GBNF rules",
          "[constrain][oracle][mask_cache]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  const std::vector<const char*> schemas = {
      // Many optional members in any order: each written set is a new context.
      R"({"type":"object","properties":{"a":{"type":"string"},"ab":{"type":"integer"},
          "b":{"type":"boolean"},"c":{"type":"string","maxLength":4},"d":{"type":"number"},
          "e":{"enum":["x","y z"]},"f":{"type":"array","items":{"type":"integer"}},
          "g":{"type":"object","properties":{"h":{"type":"string"}}}},
          "additionalProperties":false})",
      // Required members, additional members of one type, a nested object in an array.
      R"({"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},
          "tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"},
          "v":{"type":["string","null"]}},"required":["k"]}}},"required":["id","name"],
          "additionalProperties":{"type":"number"}})",
      // Alternatives whose branches share prefixes, and strings with a minimum length.
      R"({"anyOf":[{"type":"object","properties":{"p":{"type":"string","minLength":2}}},
          {"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"string"}]}},
          {"type":"string","pattern":"^[a-c]+x$"}]})",
  };
  std::size_t frame_masks = 0;
  for (const char* schema : schemas) {
    INFO(schema);
    PushdownParser parser(json_schema_grammar(nlohmann::ordered_json::parse(schema)));
    MaskComputer masks(parser, trie, bytes, kEosToken);
    CHECK(random_walks_match_oracle(parser, masks, bytes, 30, 40, 7) > 30);
    frame_masks += masks.num_frame_masks();
  }
  // The frame masks were used, not only the whole-state walk.
  CHECK(frame_masks > 20);
  // A GBNF grammar whose rules call each other, with rules that end inside a token.
  PushdownParser parser(parse_gbnf(R"(root ::= item ("," ws item)*
item ::= word | "[" root "]" | num
word ::= [a-z]+ | "\"" [a-z ]* "\""
num ::= "-"? [0-9]+ ("." [0-9]+)?
ws ::= " "?
)"));
  MaskComputer masks(parser, trie, bytes, kEosToken);
  CHECK(random_walks_match_oracle(parser, masks, bytes, 30, 40, 11) > 5);
  CHECK(masks.num_frame_masks() > 0);
}

TEST_CASE("frame masks: a state inside a called rule is combined from frames when first seen",
          "[constrain][oracle][mask_cache]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  PushdownParser parser(json_schema_grammar(nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"a":{"type":"string"},"n":{"type":"integer"}}})")));
  MaskComputer masks(parser, trie, bytes, kEosToken);
  // No mask was asked before: each state below is seen for the first time, inside a string
  // value and inside an integer value, whose frames end on a closing quote, a comma or a brace:
  // the tokens that end a frame are found by walking the trie below those prefixes from the
  // whole state.
  for (const char* text : {R"({"a":"x)", R"({"n":1)", R"({"a":"x","n":)"}) {
    INFO(text);
    const int state = parser.advance(parser.initial_state(), text);
    REQUIRE(state != PushdownParser::kDead);
    const std::size_t before = masks.num_frame_masks();
    REQUIRE(masks.mask(state) == masks.oracle_mask(state));
    CHECK(masks.num_frame_masks() > before);
  }
}

TEST_CASE("frame masks: random walks match the oracle on the Llama 2 vocabulary",
          "[constrain][oracle][mask_cache]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tokenizer.bin"), 32000);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  PushdownParser parser(json_schema_grammar(nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"},
          "ok":{"type":"boolean"},"note":{"type":"string","format":"date"},
          "xs":{"type":"array","items":{"type":"number"}}},"additionalProperties":false})")));
  MaskComputer masks(parser, trie, bytes, kEosToken);
  CHECK(random_walks_match_oracle(parser, masks, bytes, 4, 25, 3) > 20);
  CHECK(masks.num_frame_masks() > 0);
}

TEST_CASE("transitions: byte classes a state cannot tell apart share one, exactly",
          "[constrain][oracle][mask_cache]") {
  // The patterns split letters and digits into many byte classes; inside the long counted
  // string (the parser counts its characters in binary, a hundred stacks per state) all of
  // them lead to one next position, as do the continuation bytes of a UTF-8 character.
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  PushdownParser parser(json_schema_grammar(nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Fa-f0-9]{4}$"},
          "key":{"type":"string","pattern":"^[0-9a-zA-Z_-]{1,8}$"},
          "text":{"type":"string","minLength":2,"maxLength":2000}},
          "additionalProperties":false})")));
  MaskComputer masks(parser, trie, bytes, kEosToken);
  CHECK(random_walks_match_oracle(parser, masks, bytes, 20, 60, 5) > 20);
  // Every byte from every state built so far (at most 300): the cached transition, shared or
  // not, is the uncached step's.
  const int n = static_cast<int>(std::min<std::size_t>(parser.num_states(), 300));
  for (int s = 0; s < n; ++s) {
    const PushdownParser::RawState from = parser.raw(s);
    for (int b = 0; b < 256; ++b) {
      const PushdownParser::RawState expected =
          parser.step_uncached(from, static_cast<unsigned char>(b));
      const int next = parser.step(s, static_cast<unsigned char>(b));
      INFO("state " << s << ", byte " << b);
      REQUIRE((next == PushdownParser::kDead) == (expected.stacks.empty() && !expected.accept));
      if (next == PushdownParser::kDead) continue;
      const PushdownParser::RawState got = parser.raw(next);
      REQUIRE(got.stacks == expected.stacks);
      REQUIRE(got.accept == expected.accept);
    }
  }
}
