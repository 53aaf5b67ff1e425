// A string's pattern, format and length bounds together (compile_string_language): every
// string of a small alphabet against std::wregex and a count of its code points, then the
// same through JSON Schema, at the bounds, with multi-byte and escaped characters.
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/parser.hpp"
#include "inferlab/constrain/regex.hpp"
#include "inferlab/base/error.hpp"

using namespace inferlab;
using Json = nlohmann::ordered_json;
using Catch::Matchers::Contains;

namespace {

// The strings of compile_string_language, or "!" (outside the alphabets used below), so that a
// language with no string still makes a grammar.
Grammar string_language(const std::vector<RegexTerm>& regexes, int min_length, int max_length) {
  Grammar g;
  g.root = g.add_rule("root");
  g.define(g.root, g.alt({compile_string_language(g, regexes, min_length, max_length,
                                                  RegexEncoding::utf8),
                          g.literal("!")}));
  return g;
}

std::string utf8(const std::u32string& s) {
  std::string out;
  for (const char32_t c : s) append_utf8(out, static_cast<std::uint32_t>(c));
  return out;
}

// Every string of at most n code points of `alphabet`.
std::vector<std::u32string> all_words(const std::u32string& alphabet, std::size_t n) {
  std::vector<std::u32string> out{U""};
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].size() == n) continue;
    for (const char32_t c : alphabet) out.push_back(out[i] + c);
  }
  return out;
}

std::wstring wide(const std::u32string& s) { return std::wstring(s.begin(), s.end()); }

// A schema's grammar, with the string as the value of an optional property so that a
// string schema no string satisfies still compiles.
bool schema_accepts(const Json& string_schema, const std::string& json_string) {
  const Json schema = {{"type", "object"},
                       {"properties", {{"s", string_schema}}},
                       {"additionalProperties", false}};
  PushdownParser p(json_schema_grammar(schema));
  return p.matches("{\"s\": " + json_string + "}");
}

}  // namespace

TEST_CASE("string language: regexes and length bounds equal std::wregex and a count",
          "[unit][constrain]") {
  struct Case {
    std::vector<std::u32string> patterns;  // the first searched, the others matched whole
    int min_length, max_length;
  };
  const std::vector<Case> cases = {
      {{U"^a*b$"}, 0, 3},         {{U"^a*b$"}, 2, -1},       {{U"a"}, 0, 2},
      {{U"a"}, 3, 4},             {{U"^a"}, 2, 3},           {{U"b$"}, 1, 1},
      {{U"[é€]+"}, 2, 4},         {{U"^(ab|é)*$"}, 3, 5},    {{U"^(aa)*$"}, 3, 3},
      {{U"^.{2,}$"}, 0, 4},       {{U"^a{5}$"}, 0, 3},       {{U"€"}, 0, -1},
      {{U"a", U"[a-z]*b"}, 0, 4}, {{U"é", U".{3}"}, 0, -1},  {{U"^b", U"(b|é)+"}, 2, 3},
      {{U"^(a|bé?){2,9}$"}, 0, 4}, {{U"^(a?€){3,7}$"}, 2, 3}, {{U"(ab?){5,}"}, 0, 4},
      {{U"^((a+)+b?)+$"}, 1, 4},   {{U"^(a*|b)+é$"}, 2, -1},  {{U"^(a?){2,}b$"}, 0, 3},
  };
  const auto words = all_words(U"abé€", 5);
  for (const Case& c : cases) {
    std::vector<RegexTerm> terms;
    std::vector<std::wregex> refs;
    for (const auto& pat : c.patterns) {
      terms.push_back({utf8(pat), terms.empty()});
      refs.emplace_back(wide(pat), std::regex::ECMAScript);
    }
    INFO("pattern " << terms[0].pattern << (terms.size() > 1 ? " and " + terms[1].pattern : "")
                    << ", length " << c.min_length << ".." << c.max_length);
    PushdownParser p(string_language(terms, c.min_length, c.max_length));
    for (const auto& w : words) {
      const std::wstring ws = wide(w);
      bool expected = static_cast<int>(w.size()) >= c.min_length &&
                      (c.max_length < 0 || static_cast<int>(w.size()) <= c.max_length) &&
                      std::regex_search(ws, refs[0]);
      for (std::size_t i = 1; i < refs.size(); ++i)
        expected = expected && std::regex_match(ws, refs[i]);
      INFO("string '" << utf8(w) << "'");
      CHECK(p.matches(utf8(w)) == expected);
    }
  }
}

TEST_CASE("JSON Schema: minLength / maxLength with pattern count decoded characters",
          "[unit][constrain]") {
  // The pattern's own language and the bound interact: a*b has any length, maxLength cuts it.
  const Json ab = {{"type", "string"}, {"pattern", "^a*b$"}, {"maxLength", 3}};
  CHECK(schema_accepts(ab, "\"b\""));
  CHECK(schema_accepts(ab, "\"aab\""));
  CHECK_FALSE(schema_accepts(ab, "\"aaab\""));
  CHECK_FALSE(schema_accepts(ab, "\"aa\""));
  // n-1, n, n+1 characters of two and three bytes each, at both bounds.
  const Json multi = {{"type", "string"}, {"pattern", "^[é€a]*$"}, {"minLength", 2},
                      {"maxLength", 3}};
  CHECK_FALSE(schema_accepts(multi, "\"é\""));
  CHECK(schema_accepts(multi, "\"é€\""));
  CHECK(schema_accepts(multi, "\"€€€\""));
  CHECK_FALSE(schema_accepts(multi, "\"€€€é\""));
  // Unanchored: the match may sit anywhere, the other characters count too.
  const Json search = {{"type", "string"}, {"pattern", "x"}, {"minLength", 3}, {"maxLength", 4}};
  CHECK_FALSE(schema_accepts(search, "\"ax\""));
  CHECK(schema_accepts(search, "\"éxé\""));
  CHECK(schema_accepts(search, "\"xaaa\""));
  CHECK_FALSE(schema_accepts(search, "\"xaaaa\""));
  CHECK_FALSE(schema_accepts(search, "\"aaa\""));
  // An escaped character is one character: \" is two bytes, one code point.
  const Json quote = {{"type", "string"}, {"pattern", "^[\"a]+$"}, {"maxLength", 2}};
  CHECK(schema_accepts(quote, "\"\\\"a\""));
  CHECK_FALSE(schema_accepts(quote, "\"\\\"aa\""));
  // No string satisfies both: the property cannot be written.
  const Json none = {{"type", "string"}, {"pattern", "^a{5}$"}, {"maxLength", 3}};
  CHECK_FALSE(schema_accepts(none, "\"aaa\""));
  CHECK_FALSE(schema_accepts(none, "\"aaaaa\""));
  CHECK(schema_accepts(none, "\"\"") == false);
}

TEST_CASE("JSON Schema: format with pattern or length bounds is their intersection",
          "[unit][constrain]") {
  const Json date = {{"type", "string"}, {"format", "date"}, {"pattern", "^2024-"}};
  CHECK(schema_accepts(date, "\"2024-02-29\""));
  CHECK_FALSE(schema_accepts(date, "\"2023-02-28\""));  // the pattern
  CHECK_FALSE(schema_accepts(date, "\"2024-02-30\""));  // the format
  const Json email = {{"type", "string"}, {"format", "email"}, {"maxLength", 8}};
  CHECK(schema_accepts(email, "\"ab@cd.ef\""));
  CHECK_FALSE(schema_accepts(email, "\"abc@cd.ef\""));
  CHECK_FALSE(schema_accepts(email, "\"abcdefgh\""));
  const Json uri = {{"type", "string"}, {"format", "uri"}, {"pattern", "^https://"},
                    {"minLength", 10}};
  CHECK(schema_accepts(uri, "\"https://ab\""));
  CHECK_FALSE(schema_accepts(uri, "\"https://a\""));
  CHECK_FALSE(schema_accepts(uri, "\"http://abcd\""));
  CHECK_FALSE(schema_accepts(uri, "\"https://a b\""));
}

TEST_CASE("JSON Schema: a length product past the state limit is refused, not built",
          "[unit][constrain][bad-input]") {
  // A count above maxLength is cut to maxLength + 1 copies: the same strings fit.
  const Json long_count = {{"type", "string"}, {"pattern", "^(a?b?){1,900000}$"},
                           {"maxLength", 4}};
  CHECK(schema_accepts(long_count, "\"abba\""));
  CHECK(schema_accepts(long_count, "\"\""));
  CHECK_FALSE(schema_accepts(long_count, "\"aaaaa\""));
  const Json too_many = {{"type", "string"}, {"pattern", "^a{5,900000}$"}, {"maxLength", 4}};
  CHECK_FALSE(schema_accepts(too_many, "\"aaaa\""));
  // 40 nested + quantifiers: one copy per level, not two.
  std::string nested = "a";
  for (int i = 0; i < 40; ++i) nested = "(" + nested + ")+";
  const Json deep = {{"type", "string"}, {"pattern", "^" + nested + "b$"}, {"maxLength", 3}};
  CHECK(schema_accepts(deep, "\"aab\""));
  CHECK_FALSE(schema_accepts(deep, "\"aaab\""));
  const Json words = {{"type", "string"},
                      {"pattern", "^(?:\\S+\\s+){0,99}\\S+$"},
                      {"maxLength", 5000}};
  CHECK_THROWS_WITH(json_schema_grammar(words), Contains("grammar too large"));
}
