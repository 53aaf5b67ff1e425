// Chapter 08's engine: each front end against an independent reference (std::regex for regexes,
// the JSON-Schema-Test-Suite's labels and a small validator written here for schemas), the fast
// token masks against the brute-force oracle on every state the suite's valid instances reach,
// the MaskBench protocol, constrained sampling, and bad input.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/constrain/constraint.hpp"
#include "inferlab/constrain/gbnf.hpp"
#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/maskbench.hpp"
#include "inferlab/constrain/number_range.hpp"
#include "inferlab/constrain/object_members.hpp"
#include "inferlab/constrain/regex.hpp"
#include "inferlab/base/error.hpp"
#include "test_support.hpp"

using namespace inferlab;
using Json = nlohmann::ordered_json;
using Catch::Matchers::Contains;

namespace {

std::filesystem::path suite_dir() {
  if (const char* env = std::getenv("INFERLAB_JSONSCHEMA_SUITE"); env && *env) return env;
  return test::models_dir() / ".." / "jsonschema-test-suite";
}

// Every group of the suite's files for one draft, as (file stem, group).
std::vector<std::pair<std::string, Json>> suite_groups(const std::string& draft) {
  const std::filesystem::path dir = test::require_file(suite_dir() / draft);
  std::vector<std::pair<std::string, Json>> out;
  for (const auto& path : list_json_files({dir.string()})) {
    std::ifstream in(path);
    const Json suite = Json::parse(in);
    for (const auto& g : suite) out.emplace_back(std::filesystem::path(path).stem().string(), g);
  }
  return out;
}

// Every string of length <= n over `alphabet`.
std::vector<std::string> all_strings(const std::string& alphabet, int n) {
  std::vector<std::string> out{""};
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(out[i].size()) == n) continue;
    for (const char c : alphabet) out.push_back(out[i] + c);
  }
  return out;
}

}  // namespace

TEST_CASE("regex: the parser accepts exactly what std::regex matches", "[unit][constrain]") {
  const std::vector<std::string> patterns = {
      "a(b|c)*", "[a-c]{2,3}", "(ab|a)(c|bc)", "a?b+c*", "[^a]b", "(a|b|)c", "\\d+-?\\d*",
      "(a{1,2}b?){2}", "[ab-]+", ".c", "(?:ab)*c?", "a|b|c1", "[a-b1]{0,2}-",
      // Nested quantifiers, merged into one repeat where the language allows it:
      "((a+)+)+b", "((a*)+)*", "((a?)*)c", "((a?)?)b", "((ab){2,}){2}", "((a{2,})?)c",
      "((a|b)+){2,3}c"};
  const auto strings = all_strings("abc-1", 5);
  for (const auto& pat : patterns) {
    INFO("pattern " << pat);
    PushdownParser p(regex_grammar(pat));
    const std::regex re(pat, std::regex::ECMAScript);
    for (const auto& s : strings) {
      INFO("string '" << s << "'");
      CHECK(p.matches(s) == std::regex_match(s, re));
    }
  }
}

TEST_CASE("regex: deeply nested quantifiers compile to a small automaton", "[unit][constrain]") {
  // 40 levels of (...)+ used to double the automaton at every level (until its 4M-node cap).
  std::string pat = "a";
  for (int i = 0; i < 40; ++i) pat = "(" + pat + ")+";
  PushdownParser p(regex_grammar(pat + "b"));
  CHECK(p.num_nodes() < 64);
  CHECK(p.matches("aaab"));
  CHECK_FALSE(p.matches("b"));
}

TEST_CASE("regex: UTF-8 classes and JSON-string spelling", "[unit][constrain]") {
  PushdownParser p(regex_grammar("[α-ω]+é?"));
  CHECK(p.matches("αβγ"));
  CHECK(p.matches("ωé"));
  CHECK_FALSE(p.matches("a"));
  CHECK_FALSE(p.matches("\xce"));  // half a character
  // In a JSON string a pattern's '"' is written \" and a newline \n.
  Grammar g;
  g.root = g.add_rule("root");
  g.define(g.root, compile_regex(g, "^a\"\n$", RegexEncoding::json_string, true));
  PushdownParser q(g);
  CHECK(q.matches("a\\\"\\n"));
  CHECK_FALSE(q.matches("a\"\n"));
}

TEST_CASE("regex errors give the position", "[unit][constrain][bad-input]") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"a(b", "position 1: unmatched '('"},
      {"ab)", "position 2: unmatched ')'"},
      {"[z-a]", "range out of order"},
      {"a{3,1}", "max < min"},
      {"(a)\\1", "backreferences"},
      {"(?=a)", "lookaround"},
      {"*a", "position 0: quantifier without"},
      {"a{9999999}", "above the limit 1000000"},
      {"[abc", "unterminated character class"},
      {"a^b", "position 1: '^'"}};
  for (const auto& [pat, msg] : bad) {
    INFO("pattern " << pat);
    CHECK_THROWS_WITH(regex_grammar(pat), Contains("regex error at position") && Contains(msg));
  }
}

TEST_CASE("GBNF: grammars parse and accept their language", "[unit][constrain]") {
  const std::string text = R"g(# arithmetic, right-recursive
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor ("*" factor)*
factor ::= [0-9]+ | "(" expr ")" | "-" factor
)g";
  PushdownParser p(parse_gbnf(text));
  CHECK(p.matches("1+2*3"));
  CHECK(p.matches("(1+2)*-3"));
  CHECK(p.matches("((((7))))"));
  CHECK_FALSE(p.matches("1+"));
  CHECK_FALSE(p.matches("(1"));
  CHECK(p.can_continue(p.advance(p.initial_state(), "(1")));
  // Multi-line rules, classes with escapes and negation, counted repetition, '.'.
  PushdownParser q(
      parse_gbnf("root ::= \"<\" ([^>\\n] | \"\\\\>\"){1,3}\n  | x .\nx ::= [\\x41-\\x43]\n"));
  CHECK(q.matches("<ab"));
  CHECK(q.matches("<\\>"));
  CHECK(q.matches("Cé"));
  CHECK_FALSE(q.matches("<abcd"));
  CHECK_FALSE(q.matches("<>"));
}

TEST_CASE("GBNF: a rule that calls itself last runs in constant stack depth (tail calls)",
          "[unit][constrain]") {
  // Without tail calls every "a" would push one more return address: a new state per "a".
  PushdownParser p(parse_gbnf("root ::= \"a\" root | \"b\"\n"));
  const int once = p.advance(p.initial_state(), "a");
  CHECK(p.advance(once, std::string(1000, 'a')) == once);
  CHECK(p.num_states() < 10);
  CHECK(p.matches(std::string(1000, 'a') + "b"));
  CHECK_FALSE(p.matches(std::string(1000, 'a')));
  // A call that is not last still returns: "(" inner ")" must close what it opened.
  PushdownParser q(parse_gbnf("root ::= \"(\" root \")\" | \"x\"\n"));
  CHECK(q.matches("((x))"));
  CHECK_FALSE(q.matches("((x)"));
}

TEST_CASE("GBNF errors give line:column, unknown rules and left recursion",
          "[unit][constrain][bad-input]") {
  CHECK_THROWS_WITH(parse_gbnf("root ::= a\na ::= \"x\" @\n", "g.gbnf"),
                    Contains("g.gbnf:2:11: unexpected character '@'"));
  CHECK_THROWS_WITH(parse_gbnf("root ::= \"x\" y\n", "g.gbnf"),
                    Contains("g.gbnf:1:14: unknown rule 'y'"));
  CHECK_THROWS_WITH(parse_gbnf("root ::= \"abc\n"), Contains("1:10: unterminated string literal"));
  CHECK_THROWS_WITH(parse_gbnf("a ::= \"x\"\n"), Contains("no 'root' rule"));
  CHECK_THROWS_WITH(parse_gbnf("root ::= (\"a\"\n"), Contains("1:10: unmatched '('"));
  CHECK_THROWS_WITH(parse_gbnf("root ::= \"a\"\nroot ::= \"b\"\n"),
                    Contains("2:1: rule 'root' is defined twice"));
  CHECK_THROWS_WITH(PushdownParser(parse_gbnf("root ::= e\ne ::= e \"+\" \"1\" | \"1\"\n")),
                    Contains("rule 'e' is left-recursive"));
  CHECK_THROWS_WITH(
      PushdownParser(parse_gbnf("root ::= n root \"x\" | \"y\"\nn ::= \"\" | \"z\"\n")),
      Contains("left-recursive"));
  CHECK_THROWS_WITH(PushdownParser(parse_gbnf("root ::= r\nr ::= \"a\" r\n")),
                    Contains("unsatisfiable"));
}

TEST_CASE("JSON mode accepts JSON and nothing else", "[unit][constrain]") {
  PushdownParser p(json_mode_grammar());
  for (const char* ok :
       {"{}", "[]", "{\"a\": [1, -2.5e+3, true, null, \"x\\u00e9\\n\"]}", "0", "[ 1 ,\n\t2 ]",
        "\"\\ud83d\\ude00\"", "[[[[[]]]]]", "{\"\": {}}", "\"é\""}) {
    INFO(ok);
    CHECK(p.matches(ok));
  }
  for (const char* bad : {" 0", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\ud83d\"", "\"\x01\"",
                          "tru", "{'a': 1}", "\"\xff\""}) {
    INFO(bad);
    CHECK_FALSE(p.matches(bad));
  }
}

TEST_CASE("JSON Schema: integer ranges and multipleOf are exact", "[unit][constrain]") {
  const std::vector<std::pair<std::string, std::function<bool(long)>>> cases = {
      {R"({"type":"integer","minimum":-13,"maximum":217})",
       [](long x) { return x >= -13 && x <= 217; }},
      {R"({"type":"integer","exclusiveMinimum":99.5})", [](long x) { return x > 99; }},
      {R"({"type":"integer","exclusiveMaximum":-7})", [](long x) { return x < -7; }},
      {R"({"type":"integer","multipleOf":7})", [](long x) { return x % 7 == 0; }},
  };
  for (const auto& [schema, want] : cases) {
    INFO(schema);
    PushdownParser p(json_schema_grammar(Json::parse(schema)));
    for (long x = -1200; x <= 1200; ++x) {
      INFO(x);
      CHECK(p.matches(std::to_string(x)) == want(x));
    }
    CHECK_FALSE(p.matches("007"));
  }
}

TEST_CASE("JSON Schema: decimal bounds on numbers are exact", "[unit][constrain]") {
  std::vector<std::string> numbers;
  for (const char* i : {"0", "1", "2", "3", "12"}) {
    for (const char* f :
         {"", ".0", ".05", ".1", ".10", ".15", ".5", ".949", ".95", ".951", ".999"}) {
      numbers.push_back(std::string(i) + f);
      numbers.push_back("-" + numbers.back());
    }
  }
  const std::vector<double> bounds = {-2.5, -1, -0.1, 0, 0.05, 0.1, 1, 1.5, 2.95};
  int checked = 0;
  for (int lo_kind = 0; lo_kind < 3; ++lo_kind) {    // none, minimum, exclusiveMinimum
    for (int hi_kind = 0; hi_kind < 3; ++hi_kind) {  // none, maximum, exclusiveMaximum
      if (lo_kind == 0 && hi_kind == 0) continue;
      for (const double lo : bounds) {
        for (const double hi : bounds) {
          Json schema = {{"type", "number"}};
          if (lo_kind == 1) schema["minimum"] = lo;
          if (lo_kind == 2) schema["exclusiveMinimum"] = lo;
          if (hi_kind == 1) schema["maximum"] = hi;
          if (hi_kind == 2) schema["exclusiveMaximum"] = hi;
          std::unique_ptr<PushdownParser> p;
          try {
            p = std::make_unique<PushdownParser>(json_schema_grammar(schema));
          } catch (const Error& e) {
            CHECK_THAT(e.what(), Contains("unsatisfiable"));  // an empty range
            continue;
          }
          for (const auto& x : numbers) {
            const double v = std::strtod(x.c_str(), nullptr);
            bool want = true;
            if (lo_kind == 1) want = want && v >= lo;
            if (lo_kind == 2) want = want && v > lo;
            if (hi_kind == 1) want = want && v <= hi;
            if (hi_kind == 2) want = want && v < hi;
            if (x.rfind("-0", 0) == 0 && v == 0) continue;  // "-0": never generated, both fine
            INFO(schema.dump() << " " << x);
            CHECK(p->matches(x) == want);
            ++checked;
          }
        }
        if (hi_kind == 0) break;
      }
    }
  }
  CHECK(checked > 5000);
}

// A grammar whose root is the expression `build` appends.
Grammar grammar_of(const std::function<int(Grammar&)>& build) {
  Grammar g;
  g.root = g.add_rule("root");
  g.define(g.root, build(g));
  return g;
}

TEST_CASE("number ranges: the integers and decimals between bounds, the multiples of a divisor",
          "[unit][constrain]") {
  PushdownParser both(grammar_of([](Grammar& g) { return integer_range(g, {-37, 1234}); }));
  PushdownParser below(grammar_of([](Grammar& g) { return integer_range(g, {{}, -5}); }));
  PushdownParser sevens(grammar_of([](Grammar& g) { return multiple_of(g, 7); }));
  for (long x = -2000; x <= 2000; ++x) {
    INFO(x);
    CHECK(both.matches(std::to_string(x)) == (x >= -37 && x <= 1234));
    CHECK(below.matches(std::to_string(x)) == (x <= -5));
    CHECK(sevens.matches(std::to_string(x)) == (x % 7 == 0));
  }
  CHECK(both.matches("12.000"));  // an integer may carry a fraction of zeros
  CHECK_FALSE(both.matches("12.5"));
  CHECK_FALSE(both.matches("-0"));
  CHECK_FALSE(both.matches("012"));

  const auto digits = decimal_digits(0.1);
  REQUIRE(digits);
  CHECK(digits->whole == 0);
  CHECK(digits->frac == "1");  // the shortest digits, not 0.1000000000000000055
  CHECK_FALSE(decimal_digits(1e15));
  CHECK_FALSE(decimal_digits(1e-13));
  // -2.5 < x <= 0.25: x >= 0 up to 0.25, and x < 0 as "-" with a magnitude below 2.5.
  DecimalRange range;
  range.nonnegative = MagnitudeRange{std::nullopt, false, decimal_digits(0.25), false};
  range.negative = MagnitudeRange{DecimalDigits{}, true, decimal_digits(2.5), true};
  PushdownParser decimals(grammar_of([&](Grammar& g) { return decimal_range(g, range); }));
  for (const char* ok : {"0", "0.25", "0.2499", "-0.1", "-2", "-2.49999", "0.250"}) {
    INFO(ok);
    CHECK(decimals.matches(ok));
  }
  for (const char* bad : {"0.26", "0.2501", "1", "-2.5", "-2.50", "-3", "-0", "1e-3"}) {
    INFO(bad);
    CHECK_FALSE(decimals.matches(bad));
  }
}

TEST_CASE("object members: any order with dependencies, a fixed order, keys outside a list",
          "[unit][constrain]") {
  // Members A (required), B (optional, needs C) and C (optional), separated by ",".
  const auto members = [](Grammar& g) {
    return std::vector<int>{g.literal("A"), g.literal("B"), g.literal("C")};
  };
  const std::vector<bool> optional = {false, true, true};
  PushdownParser any(grammar_of([&](Grammar& g) {
    return members_in_any_order(g, members(g), optional, -1, g.literal(","), {0, 1u << 2, 0});
  }));
  for (const char* ok : {"A", "A,C", "C,A", "B,C,A", "A,C,B", "C,B,A"}) {
    INFO(ok);
    CHECK(any.matches(ok));
  }
  for (const char* bad : {"", "B,A", "A,B", "A,A", "C", "A,C,C", "A,"}) {
    INFO(bad);
    CHECK_FALSE(any.matches(bad));
  }
  PushdownParser ordered(grammar_of([&](Grammar& g) {
    return members_in_order(g, members(g), optional, g.literal("X"),
                            [&g] { return g.literal(","); });
  }));
  for (const char* ok : {"A", "A,C", "A,B,C", "A,X,X", "A,B,X"}) {
    INFO(ok);
    CHECK(ordered.matches(ok));
  }
  for (const char* bad : {"C,A", "B,A", "A,X,C", ""}) {
    INFO(bad);
    CHECK_FALSE(ordered.matches(bad));
  }
  PushdownParser other(grammar_of([](Grammar& g) { return key_other_than(g, {"a", "ab"}); }));
  for (const char* ok : {R"("")", R"("b")", R"("abc")", R"("aa")", R"("\"")", R"("é")"}) {
    INFO(ok);
    CHECK(other.matches(ok));
  }
  // A listed name in any spelling, and keys that are not canonical (json.dumps's) spellings.
  for (const char* bad : {R"("a")", R"("ab")", R"("a\u0062")", R"("\u0061")", R"("a\/")"}) {
    INFO(bad);
    CHECK_FALSE(other.matches(bad));
  }
}

TEST_CASE("key_other_than: names with escaped and multi-byte characters, free-key rules shared",
          "[unit][constrain]") {
  // The trie nodes whose next characters are plain ASCII leave it through the shared rule of
  // the other characters; the nodes before a quote, a control character or an 'é' through
  // their own. Two keys of one grammar share the free tail and that rule.
  FreeKeyRules shared;
  std::size_t rules_after_first = 0, rules_after_second = 0;
  PushdownParser keys(grammar_of([&](Grammar& g) {
    const int first = key_other_than(g, {"a", "\"q", "\xC3\xA9", "x\ny"}, &shared);
    rules_after_first = g.rules.size();
    const int second = key_other_than(g, {"b"}, &shared);
    rules_after_second = g.rules.size();
    return g.seq({first, g.literal(":"), second});
  }));
  CHECK(rules_after_second == rules_after_first);  // the trie of "b" is written in place
  for (const char* ok : {R"("b":"a")", R"("\"r":"")", R"("\u0001":"c")", "\"\xC3\xA8\":\"bb\"",
                         "\"a\xC3\xA9\":\"\xC3\xA9\"", R"("x\nz":"\"")", R"("ab":"\\")"}) {
    INFO(ok);
    CHECK(keys.matches(ok));
  }
  for (const char* bad : {R"("a":"c")", R"("\"q":"c")", "\"\xC3\xA9\":\"c\"", R"("x\ny":"c")",
                          R"("c":"b")", R"("\u0061":"c")", R"("c":"\u0062")"}) {
    INFO(bad);
    CHECK_FALSE(keys.matches(bad));
  }
}

TEST_CASE("key_other_than: a long listed name is a shallow expression", "[unit][constrain]") {
  // The trie's levels are written in place with a rule every few hundred: a name of 6,000
  // characters compiles (as one expression it would nest 12,000 levels, past the parser's
  // limit).
  const std::string name(6000, 'k');
  PushdownParser other(grammar_of([&](Grammar& g) { return key_other_than(g, {name}); }));
  CHECK_FALSE(other.matches("\"" + name + "\""));
  CHECK(other.matches("\"" + name + "x\""));
  CHECK(other.matches("\"" + name.substr(0, 5999) + "\""));
}

TEST_CASE("JSON Schema: free objects with propertyNames and property counts", "[unit][constrain]") {
  PushdownParser p(json_schema_grammar(Json::parse(
      R"({"type":"object","propertyNames":{"maxLength":2},"additionalProperties":{"type":"integer"},"minProperties":1,"maxProperties":2})")));
  CHECK(p.matches(R"({"a": 1})"));
  CHECK(p.matches(R"({"ab": 1, "c": -2})"));
  CHECK_FALSE(p.matches(R"({})"));
  CHECK_FALSE(p.matches(R"({"abc": 1})"));
  CHECK_FALSE(p.matches(R"({"a": 1, "b": 2, "c": 3})"));
  CHECK_FALSE(p.matches(R"({"a": "x"})"));
  PushdownParser none(
      json_schema_grammar(Json::parse(R"({"type":"object","propertyNames":false})")));
  CHECK(none.matches("{}"));
  CHECK_FALSE(none.matches(R"({"a": 1})"));
}

TEST_CASE("JSON Schema: properties in any order, each at most once, the required ones present",
          "[unit][constrain]") {
  // Every sequence of up to 4 members drawn from the listed a (required, string), b (integer),
  // c (null) and the additional x, y (boolean), against the rule written out: no listed key
  // twice, a present, each value of its type. (An additional key may repeat: remembering
  // arbitrary names is beyond any finite grammar, and JSON parsers keep the last value.)
  // The objects' texts are built here, not by the engine.
  const Json schema =
      Json::parse(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},
      "c":{"type":"null"}},"required":["a"],"additionalProperties":{"type":"boolean"}})");
  PushdownParser p(json_schema_grammar(schema));
  const std::vector<std::pair<std::string, std::string>> members = {
      {"a", "\"s\""}, {"b", "1"},     {"c", "null"},
      {"x", "true"},  {"y", "false"}, {"b", "\"wrong type\""}};
  int accepted = 0, checked = 0;
  std::vector<std::vector<int>> seqs{{}};
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].size() < 4) {
      for (int m = 0; m < static_cast<int>(members.size()); ++m) {
        auto next = seqs[i];
        next.push_back(m);
        seqs.push_back(next);
      }
    }
    std::string text = "{";
    std::set<std::string> keys;
    bool valid = true;
    for (std::size_t k = 0; k < seqs[i].size(); ++k) {
      const auto& [key, value] = members[static_cast<std::size_t>(seqs[i][k])];
      text += (k ? ", \"" : "\"") + key + "\": " + value;
      const bool listed = key == "a" || key == "b" || key == "c";
      valid = valid && (keys.insert(key).second || !listed) && value != "\"wrong type\"";
    }
    text += "}";
    valid = valid && keys.count("a");
    INFO(text);
    CHECK(p.matches(text) == valid);
    accepted += valid;
    ++checked;
  }
  CHECK(accepted > 100);  // e.g. {"c": null, "x": true, "a": "s", "b": 1}
  CHECK(checked == 1 + 6 + 36 + 216 + 1296);
  // const objects are equal whatever their key order.
  PushdownParser k(
      json_schema_grammar(Json::parse(R"({"const":{"foo":"bar","baz":[1,{"p":1,"q":2}]}})")));
  CHECK(k.matches(R"({"foo": "bar", "baz": [1, {"p": 1, "q": 2}]})"));
  CHECK(k.matches(R"({"baz": [1, {"q": 2, "p": 1}], "foo": "bar"})"));
  CHECK_FALSE(k.matches(R"({"baz": [{"q": 2, "p": 1}, 1], "foo": "bar"})"));
  CHECK_FALSE(k.matches(R"({"foo": "bar"})"));
  CHECK_FALSE(k.matches(R"({"foo": "bar", "foo": "bar", "baz": [1, {"p": 1, "q": 2}]})"));
  // Above the limit: the schema's order only (a subset), and a limit beyond 64 is an error.
  JsonSchemaLimits ordered;
  ordered.max_free_order_properties = 2;
  PushdownParser o(json_schema_grammar(schema, ordered));
  CHECK(o.matches(R"({"a": "s", "b": 1, "c": null, "x": true})"));
  CHECK_FALSE(o.matches(R"({"b": 1, "a": "s"})"));
  JsonSchemaLimits huge;
  huge.max_free_order_properties = 65;
  CHECK_THROWS_WITH(json_schema_grammar(schema, huge), Contains("max_free_order_properties"));
}

TEST_CASE("JSON Schema: many properties in any order, with a small automaton",
          "[unit][constrain]") {
  // 40 listed properties p0..p39 (integers), the even ones required, no other member.
  constexpr int n = 40;
  Json props = Json::object();
  Json required = Json::array();
  for (int i = 0; i < n; ++i) {
    props[fmt::format("p{}", i)] = Json::parse(R"({"type":"integer"})");
    if (i % 2 == 0) required.push_back(fmt::format("p{}", i));
  }
  Json schema = Json::object();
  schema["type"] = "object";
  schema["properties"] = props;
  schema["required"] = required;
  schema["additionalProperties"] = false;
  PushdownParser p(json_schema_grammar(schema));
  // One branch per property: a rule per subset (2^40) would not compile at all.
  CHECK(p.num_nodes() < 4000);
  // The members written as {"pK": K, ...} in the order of `keys`.
  const auto object = [](const std::vector<int>& keys) {
    std::string text = "{";
    for (std::size_t k = 0; k < keys.size(); ++k)
      text += fmt::format("{}\"p{}\": {}", k ? ", " : "", keys[k], keys[k]);
    return text + "}";
  };
  std::vector<int> all(n), evens;
  for (int i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
  for (int i = 0; i < n; i += 2) evens.push_back(i);
  std::vector<int> reversed(all.rbegin(), all.rend());
  std::vector<int> shuffled = all;
  std::mt19937 rng(32);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<int> evens_reversed(evens.rbegin(), evens.rend());
  for (const auto& keys : {all, reversed, shuffled, evens, evens_reversed}) {
    INFO(object(keys));
    CHECK(p.matches(object(keys)));
  }
  std::vector<int> missing = reversed;  // without p38, a required one
  missing.erase(missing.begin() + 1);
  std::vector<int> twice = shuffled;  // a property written twice
  twice.push_back(shuffled[5]);
  std::vector<int> odd_only;  // no required property
  for (int i = 1; i < n; i += 2) odd_only.push_back(i);
  for (const auto& keys : {missing, twice, odd_only}) {
    INFO(object(keys));
    CHECK_FALSE(p.matches(object(keys)));
  }
  CHECK_FALSE(p.matches(R"({"p0": 0, "q": 1})"));
  // minProperties / maxProperties count the listed members, in any order.
  Json bounded = Json::parse(R"({"type":"object","additionalProperties":false,
      "minProperties":10,"maxProperties":10})");
  for (int i = 0; i < 12; ++i)
    bounded["properties"][fmt::format("k{}", i)] = Json::parse(R"({"type":"null"})");
  PushdownParser b(json_schema_grammar(bounded));
  std::string ten = "{", eleven;
  for (int i = 11; i >= 2; --i) ten += fmt::format("{}\"k{}\": null", i < 11 ? ", " : "", i);
  eleven = ten + ", \"k0\": null}";
  ten += "}";
  CHECK(b.matches(ten));
  CHECK_FALSE(b.matches(eleven));
  CHECK_FALSE(b.matches(R"({"k3": null, "k1": null})"));
}

TEST_CASE("JSON Schema: dependentRequired and required names outside properties",
          "[unit][constrain]") {
  // bar requires foo; quux requires foo and bar (a name not in properties); any order.
  PushdownParser p(json_schema_grammar(Json::parse(
      R"({"properties":{"bar":{"type":"integer"}},"dependentRequired":{"bar":["foo"],"quux":["foo","bar"]}})")));
  CHECK(p.matches(R"({})"));
  CHECK(p.matches(R"({"foo": 1})"));
  CHECK(p.matches(R"({"bar": 2, "foo": "x"})"));
  CHECK(p.matches(R"({"quux": 1, "bar": 2, "foo": 3, "other": null})"));
  CHECK(p.matches("[1]"));  // not an object: the keyword does not apply
  CHECK_FALSE(p.matches(R"({"bar": 2})"));
  CHECK_FALSE(p.matches(R"({"quux": 1, "foo": 3})"));
  CHECK_FALSE(p.matches(R"({"bar": "not an integer", "foo": 1})"));
  // draft-07's array form of dependencies is the same; its schema form is still an error.
  PushdownParser d(json_schema_grammar(Json::parse(R"({"dependencies":{"a":["b"]}})")));
  CHECK(d.matches(R"({"b": 1, "a": 2})"));
  CHECK_FALSE(d.matches(R"({"a": 2})"));
  // Schema dependencies: a present key requires the object to satisfy a schema.
  PushdownParser ds(
      json_schema_grammar(Json::parse(R"({"dependencies":{"a":{"required":["b"]}}})")));
  CHECK(ds.matches(R"({"a": 1, "b": 2})"));
  CHECK(ds.matches(R"({"c": 1})"));
  CHECK(ds.matches("[1]"));
  CHECK_FALSE(ds.matches(R"({"a": 1})"));
  PushdownParser dd(json_schema_grammar(Json::parse(
      R"({"dependentSchemas":{"bar":{"properties":{"foo":{"type":"integer"},"bar":{"type":"integer"}}}}})")));
  CHECK(dd.matches(R"({"foo": "x"})"));
  CHECK(dd.matches(R"({"foo": 1, "bar": 2})"));
  CHECK_FALSE(dd.matches(R"({"foo": "x", "bar": 2})"));
  CHECK_FALSE(dd.matches(R"({"bar": "y"})"));
  // A required name that is not listed takes additionalProperties' schema.
  PushdownParser r(json_schema_grammar(
      Json::parse(R"({"required":["id"],"additionalProperties":{"type":"string"}})")));
  CHECK(r.matches(R"({"x": "a", "id": "b"})"));
  CHECK_FALSE(r.matches(R"({"x": "a"})"));
  CHECK_FALSE(r.matches(R"({"id": 1})"));
}

TEST_CASE("JSON Schema: contains and minContains", "[unit][constrain]") {
  PushdownParser c(
      json_schema_grammar(Json::parse(R"({"type":"array","contains":{"type":"integer"}})")));
  CHECK(c.matches("[1]"));
  CHECK(c.matches(R"(["a", 2, null])"));
  CHECK_FALSE(c.matches("[]"));
  CHECK_FALSE(c.matches(R"(["a", 2.5])"));
  // The match must also satisfy items.
  PushdownParser i(
      json_schema_grammar(Json::parse(R"({"items":{"type":"integer"},"contains":{"minimum":5}})")));
  CHECK(i.matches("[1, 6]"));
  CHECK(i.matches("{}"));  // not an array: the keywords do not apply
  CHECK_FALSE(i.matches("[1, 2]"));
  CHECK_FALSE(i.matches(R"([6, "a"])"));
  PushdownParser m(json_schema_grammar(Json::parse(R"({"contains":{"const":1},"minContains":2})")));
  CHECK(m.matches("[1, 2, 1]"));
  CHECK(m.matches("[1, 1]"));
  CHECK_FALSE(m.matches("[1, 2]"));
  CHECK(m.matches("3"));
  PushdownParser z(json_schema_grammar(Json::parse(R"({"contains":{"const":1},"minContains":0})")));
  CHECK(z.matches("[]"));
  PushdownParser f(json_schema_grammar(Json::parse(R"({"contains":false})")));
  CHECK_FALSE(f.matches("[1]"));
  CHECK(f.matches("1"));
}

TEST_CASE("JSON Schema: if/then/else on a type or a boolean, uniqueItems where it is decidable",
          "[unit][constrain]") {
  PushdownParser t(json_schema_grammar(
      Json::parse(R"({"if":{"type":"string"},"then":{"maxLength":2},"else":{"type":"integer"}})")));
  CHECK(t.matches(R"("ab")"));
  CHECK_FALSE(t.matches(R"("abc")"));
  CHECK(t.matches("3"));
  CHECK_FALSE(t.matches("3.5"));
  CHECK_FALSE(t.matches("null"));
  PushdownParser b(json_schema_grammar(
      Json::parse(R"({"if":false,"then":{"const":"then"},"else":{"const":"else"}})")));
  CHECK(b.matches(R"("else")"));
  CHECK_FALSE(b.matches(R"("then")"));
  // then in another allOf branch than its if does nothing.
  PushdownParser a(json_schema_grammar(
      Json::parse(R"({"allOf":[{"if":{"type":"string"}},{"then":{"maxLength":1}}]})")));
  CHECK(a.matches(R"("abc")"));
  PushdownParser u(json_schema_grammar(Json::parse(R"({"uniqueItems":true,"maxItems":1})")));
  CHECK(u.matches("[1]"));
  CHECK_FALSE(u.matches("[1, 1]"));
  // Items from a few constants: every array of different ones is listed.
  PushdownParser ub(json_schema_grammar(Json::parse(
      R"({"prefixItems":[{"type":"boolean"},{"type":"boolean"}],"items":false,"uniqueItems":true})")));
  CHECK(ub.matches("[]"));
  CHECK(ub.matches("[true, false]"));
  CHECK(ub.matches("[false]"));
  CHECK_FALSE(ub.matches("[true, true]"));
  CHECK_FALSE(ub.matches("[true, false, true]"));
  PushdownParser ue(json_schema_grammar(
      Json::parse(R"({"items":{"enum":[1, "a", 1.0]},"uniqueItems":true,"minItems":2})")));
  CHECK(ue.matches(R"([1, "a"])"));
  CHECK(ue.matches(R"(["a", 1.0])"));
  CHECK_FALSE(ue.matches("[1, 1.0]"));
  CHECK_FALSE(ue.matches("[1]"));
  CHECK_THROWS_WITH(json_schema_grammar(Json::parse(
                        R"({"items":{"type":"boolean"},"prefixItems":[{}],"uniqueItems":true})")),
                    Contains("'uniqueItems'"));
}

TEST_CASE("JSON Schema bad input: unsupported keywords named, limits, no crash",
          "[unit][constrain][bad-input]") {
  auto compile = [](const std::string& s) {
    return PushdownParser(json_schema_grammar(Json::parse(s)));
  };
  CHECK_THROWS_WITH(compile(R"({"type":"array","contains":{"type":"integer"},"maxContains":2})"),
                    Contains("unsupported JSON Schema keyword 'maxContains'"));
  CHECK_THROWS_WITH(compile(R"({"uniqueItems":true})"),
                    Contains("unsupported JSON Schema keyword 'uniqueItems'"));
  CHECK_THROWS_WITH(compile(R"({"if":{"const":1},"then":{"type":"integer"}})"),
                    Contains("unsupported JSON Schema keyword 'if'"));
  // 1 and 1.0 are the same value: these branches overlap, so oneOf cannot be an anyOf.
  CHECK_THROWS_WITH(compile(R"({"oneOf":[{"const":1},{"const":1.0}]})"), Contains("'oneOf'"));
  CHECK_THROWS_WITH(compile(R"({"oneOf":[{"const":{"a":1,"b":2}},{"const":{"b":2,"a":1}}]})"),
                    Contains("'oneOf'"));
  CHECK_THROWS_WITH(
      compile(R"({"patternProperties":{"^a":{"type":"integer"},"^b":{"type":"string"}}})"),
      Contains("'patternProperties'"));
  CHECK_THROWS_WITH(compile(R"({"$ref":"http://example.com/x.json"})"),
                    Contains("only local references"));
  CHECK_THROWS_WITH(compile(R"({"$ref":"#/$defs/missing"})"), Contains("does not resolve"));
  CHECK_THROWS_WITH(compile(R"({"oneOf":[{"type":"integer"},{"minimum":2}]})"),
                    Contains("'oneOf'"));
  CHECK_THROWS_WITH(compile(R"({"type":"string","pattern":"a(b"})"),
                    Contains("regex error at position 1"));
  CHECK_THROWS_WITH(compile("false"), Contains("unsatisfiable"));
  // Values of the wrong JSON type (found by fuzzing): one error, not nlohmann's exception.
  CHECK_THROWS_WITH(compile(R"({"type":"object","required":[1]})"),
                    Contains("required must list strings, not 1"));
  CHECK_THROWS_WITH(compile(R"({"type":"object","dependentRequired":{"a":[true]}})"),
                    Contains("dependentRequired lists must hold strings"));
  CHECK_THROWS_AS(compile(R"({"$ref":7})"), Error);
  CHECK_THROWS_WITH(compile(R"({"type":"integer","minimum":5,"maximum":4})"),
                    Contains("unsatisfiable"));
  // Nested thousands deep: a clear error, not a stack overflow.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += R"({"items":)";
  deep += "{}";
  for (int i = 0; i < 5000; ++i) deep += "}";
  CHECK_THROWS_WITH(compile(deep), Contains("deeper than 128 levels"));
  // A recursive schema is fine: it becomes a recursive rule.
  PushdownParser rec = compile(
      R"({"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"})");
  CHECK(rec.matches("[[[], [[]]], []]"));
  CHECK_FALSE(rec.matches("[1]"));
  // A huge enum compiles and is exact.
  Json big = Json::array();
  for (int i = 0; i < 20000; ++i) big.push_back(std::string("v").append(std::to_string(i * 3)));
  PushdownParser e = compile(Json{{"enum", big}}.dump());
  CHECK(e.matches("\"v59997\""));
  CHECK_FALSE(e.matches("\"v59998\""));
}

namespace {

// An independent validator for the keywords the compiler honours (std::regex for patterns),
// used to check what constrained decoding generates.
bool validate(const Json& root, const Json& s, const Json& x, int depth = 0) {
  if (depth > 64) return false;
  if (s.is_boolean()) return s.get<bool>();
  auto type_ok = [&](const std::string& t) {
    if (t == "null") return x.is_null();
    if (t == "boolean") return x.is_boolean();
    if (t == "object") return x.is_object();
    if (t == "array") return x.is_array();
    if (t == "string") return x.is_string();
    if (t == "number") return x.is_number();
    return x.is_number() && std::floor(x.get<double>()) == x.get<double>();
  };
  if (s.contains("$ref")) {
    const std::string r = s["$ref"].get<std::string>();
    const Json& target = r == "#" ? root : root.at(Json::json_pointer(r.substr(1)));
    if (!validate(root, target, x, depth + 1)) return false;
  }
  if (s.contains("type")) {
    bool any = false;
    if (s["type"].is_string())
      any = type_ok(s["type"].get<std::string>());
    else
      for (const auto& t : s["type"]) any = any || type_ok(t.get<std::string>());
    if (!any) return false;
  }
  // JSON values are equal whatever the order of object keys: compare as unordered JSON.
  auto same = [](const Json& a, const Json& b) {
    return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
  };
  if (s.contains("enum") &&
      std::none_of(s["enum"].begin(), s["enum"].end(), [&](const Json& e) { return same(e, x); }))
    return false;
  if (s.contains("const") && !same(s["const"], x)) return false;
  if (s.contains("allOf"))
    for (const auto& b : s["allOf"])
      if (!validate(root, b, x, depth + 1)) return false;
  if (s.contains("anyOf")) {
    bool any = false;
    for (const auto& b : s["anyOf"]) any = any || validate(root, b, x, depth + 1);
    if (!any) return false;
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const auto& b : s["oneOf"]) n += validate(root, b, x, depth + 1);
    if (n != 1) return false;
  }
  if (s.contains("not") && validate(root, s["not"], x, depth + 1)) return false;
  if (s.contains("if")) {
    const bool cond = validate(root, s["if"], x, depth + 1);
    if (cond && s.contains("then") && !validate(root, s["then"], x, depth + 1)) return false;
    if (!cond && s.contains("else") && !validate(root, s["else"], x, depth + 1)) return false;
  }
  if (x.is_number()) {
    const double v = x.get<double>();
    if (s.contains("minimum") && v < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && v > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && v <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && v >= s["exclusiveMaximum"].get<double>()) return false;
    if (s.contains("multipleOf") && std::fmod(v, s["multipleOf"].get<double>()) != 0) return false;
  }
  if (x.is_string()) {
    const std::string v = x.get<std::string>();
    long n = 0;
    for (const unsigned char c : v) n += (c & 0xC0) != 0x80;
    if (s.contains("minLength") && n < s["minLength"].get<long>()) return false;
    if (s.contains("maxLength") && n > s["maxLength"].get<long>()) return false;
    if (s.contains("pattern") && !std::regex_search(v, std::regex(s["pattern"].get<std::string>())))
      return false;
  }
  if (x.is_array()) {
    const long n = static_cast<long>(x.size());
    if (s.contains("minItems") && n < s["minItems"].get<long>()) return false;
    if (s.contains("maxItems") && n > s["maxItems"].get<long>()) return false;
    std::size_t prefix = 0;
    const Json* pre = s.contains("prefixItems")
                          ? &s["prefixItems"]
                          : (s.contains("items") && s["items"].is_array() ? &s["items"] : nullptr);
    if (pre) {
      prefix = pre->size();
      for (std::size_t i = 0; i < std::min(prefix, x.size()); ++i)
        if (!validate(root, (*pre)[i], x[i], depth + 1)) return false;
    }
    const Json* rest = s.contains("prefixItems") ? (s.contains("items") ? &s["items"] : nullptr)
                       : pre ? (s.contains("additionalItems") ? &s["additionalItems"] : nullptr)
                             : (s.contains("items") ? &s["items"] : nullptr);
    if (rest)
      for (std::size_t i = prefix; i < x.size(); ++i)
        if (!validate(root, *rest, x[i], depth + 1)) return false;
    if (s.contains("contains")) {
      long matched = 0;
      for (const auto& item : x) matched += validate(root, s["contains"], item, depth + 1);
      if (matched < (s.contains("minContains") ? s["minContains"].get<long>() : 1)) return false;
      if (s.contains("maxContains") && matched > s["maxContains"].get<long>()) return false;
    }
    if (s.value("uniqueItems", false)) {
      for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j)
          if (same(x[i], x[j])) return false;
    }
  }
  if (x.is_object()) {
    for (const char* kw : {"dependentRequired", "dependentSchemas", "dependencies"}) {
      if (!s.contains(kw)) continue;
      for (const auto& [k, v] : s[kw].items()) {
        if (!x.contains(k)) continue;
        if (v.is_array()) {
          for (const auto& r : v)
            if (!x.contains(r.get<std::string>())) return false;
        } else if (!validate(root, v, x, depth + 1)) {
          return false;
        }
      }
    }
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!x.contains(r.get<std::string>())) return false;
    for (const auto& [k, v] : x.items()) {
      if (s.contains("properties") && s["properties"].contains(k)) {
        if (!validate(root, s["properties"][k], v, depth + 1)) return false;
      } else if (s.contains("additionalProperties") &&
                 !validate(root, s["additionalProperties"], v, depth + 1)) {
        return false;
      }
    }
    if (s.contains("minProperties") && static_cast<long>(x.size()) < s["minProperties"].get<long>())
      return false;
    if (s.contains("maxProperties") && static_cast<long>(x.size()) > s["maxProperties"].get<long>())
      return false;
  }
  return true;
}

// Forces every valid instance of every compilable group through the engine; at every distinct
// state reached, the fast mask must equal the oracle's. Returns the number of states checked.
int check_masks_against_oracle(const Tokenizer& tok, const std::string& draft,
                               int every_nth_group) {
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  int checked = 0, groups = 0, index = 0;
  for (const auto& [file, group] : suite_groups(draft)) {
    if (index++ % every_nth_group != 0) continue;
    std::unique_ptr<PushdownParser> parser;
    try {
      parser = std::make_unique<PushdownParser>(json_schema_grammar(group["schema"]));
    } catch (const Error&) {
      continue;  // a compile error: nothing to compare
    }
    ++groups;
    MaskComputer masks(*parser, trie, bytes, kEosToken);
    std::set<int> seen;
    for (const auto& t : group["tests"]) {
      if (!t["valid"].get<bool>()) continue;
      std::vector<int> ids = tok.encode(python_json_dumps(t["data"]), false, false, false);
      int state = parser->initial_state();
      for (std::size_t i = 0; i <= ids.size() && state != PushdownParser::kDead; ++i) {
        if (seen.insert(state).second) {
          INFO(draft << "/" << file << ": " << group["description"] << " / " << t["description"]
                     << ", token " << i);
          REQUIRE(masks.mask(state) == masks.oracle_mask(state));
          ++checked;
        }
        if (i < ids.size()) {
          if (!masks.mask(state).allowed(ids[i]))
            break;  // ordering limits: the instance leaves the grammar
          state = parser->advance(state, bytes[static_cast<std::size_t>(ids[i])]);
        }
      }
    }
  }
  CHECK(groups > 100 / every_nth_group);
  return checked;
}

}  // namespace

TEST_CASE("fast masks equal the oracle on every state of the test suite (tok512)",
          "[constrain][oracle]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  for (const char* draft : {"draft2020-12", "draft7"}) {
    const int n = check_masks_against_oracle(tok, draft, 1);
    INFO(draft << ": " << n << " states");
    CHECK(n > 500);
  }
}

TEST_CASE("fast masks equal the oracle on every state of the test suite (Llama 2 32K)",
          "[constrain][oracle]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tokenizer.bin"), 32000);
  // Every group of 2020-12; the oracle costs V x token length closures per state.
  CHECK(check_masks_against_oracle(tok, "draft2020-12", 1) > 500);
}

TEST_CASE("fast masks equal the oracle inside strings of multi-byte characters and counted lengths",
          "[constrain][oracle]") {
  // The loop tables' hard cases: UTF-8 characters of 2-4 bytes skipped as whole characters,
  // strings whose minimum length counts characters in states (a chain, not a loop), keys that
  // are a listed name or any other string, a pattern whose loop set is only part of ASCII.
  const Tokenizer tok = Tokenizer::load(test::model_file("tokenizer.bin"), 32000);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"type":"object","properties":{"név":{"type":"string","minLength":3}},"required":["név"]})",
       R"({"név": "Привет, мир — 你好 🌍 ok", "другое": "日本語"})"},
      {R"({"type":"array","items":{"type":"string","minLength":5,"maxLength":40}})",
       R"(["αβγδε", "日本語のテキストです", "plain ascii text"])"},
      {R"({"type":"string","pattern":"^[a-zа-я ]+$"})", R"("abc абв где")"},
      {R"({"type":"object","additionalProperties":{"type":"string","minLength":2}})",
       R"({"ключ": "значение", "k\"ey": "va\\lue\n", "emoji 🙂": "𝄞 music"})"},
  };
  for (const auto& [schema, instance] : cases) {
    PushdownParser parser(json_schema_grammar(Json::parse(schema)));
    MaskComputer masks(parser, trie, bytes, kEosToken);
    const std::string text = python_json_dumps(Json::parse(instance));
    const std::vector<int> ids = tok.encode(text, false, false, false);
    int state = parser.initial_state();
    for (std::size_t i = 0; i <= ids.size(); ++i) {
      INFO(schema << " / " << text << ", token " << i);
      REQUIRE(masks.mask(state) == masks.oracle_mask(state));
      if (i == ids.size()) break;
      REQUIRE(masks.mask(state).allowed(ids[i]));  // every instance here is valid
      state = parser.advance(state, bytes[static_cast<std::size_t>(ids[i])]);
    }
    CHECK(parser.accepts(state));
  }
}

TEST_CASE("JSON Schema: format is an assertion by default and an annotation on request",
          "[unit][constrain]") {
  const Json schema = Json::parse(R"({"type":"string","format":"date"})");
  PushdownParser asserted(json_schema_grammar(schema));
  CHECK(asserted.matches("\"2024-02-29\""));
  CHECK_FALSE(asserted.matches("\"not a date\""));
  JsonSchemaLimits annotation;
  annotation.format_assertion = false;
  PushdownParser annotated(json_schema_grammar(schema, annotation));
  CHECK(annotated.matches("\"2024-02-29\""));
  CHECK(annotated.matches("\"not a date\""));
  CHECK_FALSE(annotated.matches("12"));
  // An unknown format is an annotation either way (the specification's default).
  const Json unknown = Json::parse(R"({"type":"string","format":"x-unknown"})");
  PushdownParser unknown_asserted(json_schema_grammar(unknown));
  CHECK(unknown_asserted.matches("\"x\""));
  PushdownParser any(json_schema_grammar(unknown, annotation));
  CHECK(any.matches("\"x\""));
}

TEST_CASE("MaskBench over the test suite: no invalid instance accepted, no crash",
          "[constrain][maskbench]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tokenizer.bin"), 32000);
  const MaskBenchVocab vocab(tok);
  for (const char* draft : {"draft2020-12", "draft7"}) {
    std::vector<MaskBenchResult> results;
    int index = 0;
    for (const auto& [file, group] : suite_groups(draft)) {
      for (const Json& f : maskbench_from_test_suite(Json::array({group}))) {
        results.push_back(run_maskbench(f, file + "-" + std::to_string(index++), vocab, 60));
        const MaskBenchResult& r = results.back();
        INFO(r.to_json().dump());
        CHECK_FALSE(r.invalid_accepted);
        CHECK(r.crash.empty());
      }
    }
    const Json s = maskbench_summary(results)["summary"];
    INFO(s.dump());
    CHECK(s["crashes"] == 0);
    CHECK(s["invalid_accepted"] == 0);
    CHECK(s["passing"].get<int>() >=
          150);  // 172 of 320 per draft at the time of writing; a regression guard
  }
}

TEST_CASE("constrained random walks generate instances the validator accepts",
          "[constrain][validator]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  Rng rng(1234);
  int generated = 0;
  for (const auto& [file, group] : suite_groups("draft2020-12")) {
    const Json& schema = group["schema"];
    if (file == "format" || file == "ref" || file == "refRemote" || file == "defs" ||
        file == "dynamicRef" || file == "anchor" || file == "vocabulary" ||
        file == "unevaluatedItems" || file == "unevaluatedProperties") {
      continue;  // the validator above does not resolve these (formats, $id-relative refs)
    }
    std::unique_ptr<PushdownParser> parser;
    try {
      parser = std::make_unique<PushdownParser>(json_schema_grammar(schema));
    } catch (const Error&) {
      continue;
    }
    MaskComputer masks(*parser, trie, bytes, kEosToken);
    for (int sample = 0; sample < 3; ++sample) {
      int state = parser->initial_state();
      std::string text;
      bool ended = false;
      for (int step = 0; step < 64 && !ended; ++step) {
        const TokenMask& m = masks.mask(state);
        REQUIRE(m.count() > 0);  // a live state always has a way on
        // Prefer ending, then short tokens, so that the walk terminates.
        if (m.allowed(kEosToken) && rng.next_f32() < 0.7f) {
          ended = true;
          break;
        }
        std::vector<int> allowed;
        for (int t = 0; t < tok.vocab_size(); ++t) {
          if (m.allowed(t) && t != kEosToken &&
              (bytes[static_cast<std::size_t>(t)].size() <= 2 || rng.next_f32() < 0.1f))
            allowed.push_back(t);
        }
        if (allowed.empty()) {
          for (int t = 0; t < tok.vocab_size(); ++t)
            if (m.allowed(t) && t != kEosToken) allowed.push_back(t);
        }
        if (allowed.empty()) break;
        const int t = allowed[rng.next_u32() % allowed.size()];
        text += bytes[static_cast<std::size_t>(t)];
        state = parser->advance(state, bytes[static_cast<std::size_t>(t)]);
        REQUIRE(state != PushdownParser::kDead);
      }
      if (!ended) continue;
      INFO(file << ": " << group["description"] << "\nschema " << schema.dump() << "\ngenerated "
                << text);
      Json x;
      try {
        x = Json::parse(text);
      } catch (const nlohmann::json::out_of_range&) {
        continue;  // a number beyond double (7e822): valid JSON that nlohmann cannot hold
      }
      CHECK(validate(schema, schema, x));
      ++generated;
    }
  }
  CHECK(generated > 100);
}

TEST_CASE("constrained sampling: every chapter 01 sampler setting yields valid output",
          "[constrain][sampling]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(512);
  const std::vector<std::string> bytes = token_byte_strings(tok);
  const TokenTrie trie(bytes);
  std::vector<SamplingParams> settings(5);
  settings[0].temperature = 0.0f;
  settings[1].temperature = 1.3f;
  settings[2].top_k = 5;
  settings[3].top_p = 0.5f;
  settings[3].min_p = 0.05f;
  settings[4].repetition_penalty = 1.3f;
  settings[4].frequency_penalty = 0.5f;
  settings[4].presence_penalty = 0.5f;
  const std::vector<std::pair<ConstraintKind, std::string>> constraints = {
      {ConstraintKind::regex, "[a-z]{3,8}@(example|test)\\.(com|org)"},
      {ConstraintKind::gbnf,
       "root ::= \"(\" num (\",\" num){0,3} \")\"\nnum ::= [1-9] [0-9]{0,2}\n"},
      {ConstraintKind::json_schema,
       R"({"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":9},"b":{"enum":["x","y"]}},"required":["a","b"],"additionalProperties":false})"},
  };
  int ended = 0;
  for (const auto& [kind, text] : constraints) {
    for (std::size_t i = 0; i < settings.size(); ++i) {
      PushdownParser parser(compile_constraint(kind, text, "test"));
      MaskComputer masks(parser, trie, bytes, kEosToken);
      ConstrainedOptions o;
      o.prompt = "x";
      o.steps = 200;
      o.sampling = settings[i];
      o.sampling.seed = 7 + i;
      const ConstrainedResult r = generate_constrained(model, tok, parser, masks, bytes, o);
      INFO(text << " / setting " << i << ": " << r.text);
      // Replay on a fresh parser: the text never left the language, and when generation ended
      // (EOS) it is complete. A random model may run out of steps first (e.g. in a string).
      PushdownParser replay(compile_constraint(kind, text, "test"));
      const int end = replay.advance(replay.initial_state(), r.text);
      CHECK(end != PushdownParser::kDead);
      if (r.ended) {
        CHECK(r.valid);
        CHECK(replay.accepts(end));
        ++ended;
      }
      for (const double m : r.removed_mass) CHECK((m >= -1e-6 && m <= 1 + 1e-6));
    }
  }
  CHECK(ended >= 10);  // of 15 runs
}

TEST_CASE("hostile schemas and grammars: counts, huge bounds, $ref fan-out, surrogates",
          "[unit][constrain][bad-input]") {
  auto compile = [](const std::string& s) {
    return PushdownParser(json_schema_grammar(Json::parse(s)));
  };
  CHECK_THROWS_WITH(compile(R"({"type":"string","maxLength":1.5})"),
                    Contains("maxLength must be a non-negative integer, got 1.5"));
  PushdownParser len = compile(R"({"type":"string","maxLength":2.0})");
  CHECK(len.matches("\"ab\""));
  CHECK_FALSE(len.matches("\"abc\""));
  // Integer bounds beyond 64 bits are bounds, not "unsatisfiable".
  // `head` then n copies of `fill`.
  const auto digits = [](std::string head, std::size_t n, char fill) {
    return head.append(n, fill);
  };
  PushdownParser big = compile(R"({"type":"integer","minimum":1e30,"maximum":1e31})");
  CHECK(big.matches(digits("1", 30, '0')));
  CHECK(big.matches(digits("5", 30, '7')));
  CHECK(big.matches(digits("1", 31, '0')));
  CHECK_FALSE(big.matches(digits("", 30, '9')));
  CHECK_FALSE(big.matches(digits("1", 30, '0') + "1"));
  PushdownParser excl =
      compile(R"({"type":"integer","exclusiveMinimum":-1e20,"exclusiveMaximum":1e20})");
  CHECK(excl.matches(digits("-", 20, '9')));
  CHECK_FALSE(excl.matches(digits("-1", 20, '0')));
  CHECK_FALSE(excl.matches(digits("1", 20, '0')));
  // 30 definitions, each an allOf of two $refs to the next: 2^30 paths, each flattened once.
  Json defs = Json::object();
  for (int i = 0; i < 30; ++i) {
    const std::string next = fmt::format("#/$defs/d{}", i + 1);
    defs[fmt::format("d{}", i)] = Json{{"allOf", {{{"$ref", next}}, {{"$ref", next}}}}};
  }
  defs["d30"] = Json{{"type", "integer"}};
  // (Walked path by path this would not finish: CTest's timeout is the failure, not a clock.)
  PushdownParser chain = compile(Json{{"$defs", defs}, {"$ref", "#/$defs/d0"}}.dump());
  CHECK(chain.matches("12"));
  CHECK_FALSE(chain.matches("\"x\""));
  // The compile budget stops what memoising cannot shrink.
  JsonSchemaLimits small;
  small.max_subschemas = 20;
  CHECK_THROWS_WITH(json_schema_grammar(Json{{"$defs", defs}, {"$ref", "#/$defs/d0"}}, small),
                    Contains("visits more than 20 subschemas"));
  // The JSON Schema entry point parses with the checked parser: deep nesting, a NUL byte.
  using namespace std::string_literals;
  CHECK_THROWS_WITH(compile_constraint(ConstraintKind::json_schema, "{}\0"s, "s.json"),
                    Contains("s.json: a NUL byte at byte 2"));
  CHECK_THROWS_WITH(compile_constraint(ConstraintKind::json_schema,
                                       "{\"const\": " + std::string(100000, '[') + "}", "s.json"),
                    Contains("s.json: arrays and objects nested deeper than the limit of 512"));
  // GBNF: a surrogate is no character; bytes that are not UTF-8 are named as such.
  CHECK_THROWS_WITH(parse_gbnf("root ::= \"\\uD800\"", "g.gbnf"),
                    Contains("g.gbnf:1:11: \\uD800 is a UTF-16 surrogate"));
  CHECK_THROWS_WITH(parse_gbnf("root ::= \"a\xff\"\n", "g.gbnf"), Contains("invalid UTF-8"));
  // Regex: \x{...} as PCRE writes it (the uri format uses \x{10FFFF}).
  PushdownParser hex(regex_grammar("\\x{41}\\x{10FFFF}"));
  CHECK(hex.matches("A\xf4\x8f\xbf\xbf"));
  CHECK_THROWS_WITH(regex_grammar("\\x{}"), Contains("bad \\x{...} escape"));
}

TEST_CASE("JSON Schema: unknown keywords are annotations everywhere", "[unit][constrain]") {
  auto compile = [](const std::string& s) {
    return PushdownParser(json_schema_grammar(Json::parse(s)));
  };
  PushdownParser e = compile(R"({"enum":["a","b"],"readonly":true,"x-order":3,"enumNames":["A"]})");
  CHECK(e.matches("\"a\""));
  CHECK_FALSE(e.matches("\"c\""));
  PushdownParser m = compile(R"({"$defs":{"t":{"type":"string","example":"x","_id":1}},
      "allOf":[{"$ref":"#/$defs/t"},{"type":"string","example":"y","_id":2,"title":"T"}]})");
  CHECK(m.matches("\"q\""));
  CHECK_FALSE(m.matches("1"));
}

TEST_CASE("MaskBench runner: malformed tests are file errors, folders listed once",
          "[unit][constrain][maskbench][bad-input]") {
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  const MaskBenchVocab vocab(tok);
  const Json schema = Json{{"type", "integer"}};
  for (const Json& tests :
       {Json::array({Json{{"data", 1}}}), Json::array({Json{{"valid", true}}}),
        Json::array({Json{{"valid", "yes"}, {"data", 1}}}), Json::array({Json(3)})}) {
    const MaskBenchResult r =
        run_maskbench(Json{{"schema", schema}, {"tests", tests}}, "f", vocab, 5);
    INFO(tests.dump());
    CHECK_FALSE(r.file_error.empty());
    CHECK(r.compile_error.empty());
    CHECK(r.crash.empty());
    CHECK_FALSE(r.invalid_accepted);
    const Json s = maskbench_summary({r})["summary"];
    CHECK(s["file_errors"] == 1);
    CHECK(s["passing"] == 0);
    CHECK(s["compile_errors"] == 0);
    CHECK(s["crashes"] == 0);
  }
  // Both kinds of wrong test are reported, with their descriptions.
  const Json file =
      Json{{"schema", schema},
           {"tests", Json::array({Json{{"description", "one"}, {"valid", false}, {"data", 1}},
                                  Json{{"description", "two"}, {"valid", true}, {"data", "x"}}})}};
  const MaskBenchResult r = run_maskbench(file, "f", vocab, 5);
  CHECK(r.invalid_accepted_tests == std::vector<std::string>{"one"});
  CHECK(r.valid_rejected_tests == std::vector<std::string>{"two"});
  const Json rec = r.to_json();
  CHECK(rec["invalid_accepted"] == Json::array({"one"}));
  CHECK(rec["valid_rejected"] == Json::array({"two"}));
  const Json s = maskbench_summary({r})["summary"];
  CHECK(s["invalid_accepted"] == 1);
  CHECK(s["valid_rejected"] == 1);
  CHECK(s["validation_errors"] == 1);
  // Folders: an empty one is an error; a file reached twice runs once.
  const auto dir = std::filesystem::temp_directory_path() / "inferlab_maskbench_list";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "empty");
  CHECK_THROWS_WITH(list_json_files({(dir / "empty").string()}), Contains("holds no *.json file"));
  std::ofstream(dir / "a.json") << file.dump();
  const auto files = list_json_files({dir.string(), dir.string(), (dir / "a.json").string()});
  CHECK(files.size() == 1);
  // A file that is not JSON, or nests too deep, is a file error naming it.
  std::ofstream(dir / "b.json") << std::string(100000, '[');
  const MaskBenchResult deep = run_maskbench_isolated((dir / "b.json").string(), vocab, 5);
  CHECK_THAT(deep.file_error, Contains("b.json"));
  CHECK_THAT(deep.file_error, Contains("limit of 512 levels"));
  std::filesystem::remove_all(dir);
}

namespace {

// Cases of the JSON-Schema-Test-Suite's optional/format files (draft 2020-12): for each
// format, strings that are valid and strings that are not.
struct FormatCases {
  const char* format;
  std::vector<std::string> valid, invalid;
};

const std::vector<FormatCases>& format_cases() {
  static const std::vector<FormatCases> cases = {
      {"date-time",
       {"1963-06-19T08:30:06.283185Z", "1963-06-19T08:30:06Z", "1937-01-01T12:00:27.87+00:20",
        "1990-12-31T15:59:50.123-08:00", "1998-12-31T23:59:60Z", "1963-06-19t08:30:06.283185z",
        "1985-04-12T00:59:59.999999999999999Z"},
       {"1998-12-31T23:59:61Z", "1998-12-31T23:58:60Z", "1998-12-31T22:59:60Z",
        "1990-02-31T15:59:59.123-08:00", "1990-12-31T15:59:59-24:00",
        "1963-06-19T08:30:06.28123+01:00Z", "1990-12-31T24:00:00Z", "1990-12-31T15:60:00Z",
        "1990-12-31T10:00:00+10:60", "06/19/1963 08:30:06 PST", "2013-350T01:01:01",
        "1963-6-19T08:30:06.283185Z", "1963-06-1T08:30:06.283185Z", "1963-06-1\u09EAT00:00:00Z",
        "+11963-06-19T08:30:06.283185Z"}},
      {"date",
       {"1963-06-19", "2020-01-31", "2021-02-28", "2020-04-30", "2020-02-29", "0400-02-29",
        "0001-01-01"},
       {"2020-01-32", "2020-02-30",  "2020-04-31",  "2020-06-31", "2020-11-31",
        "06/19/1963", "2013-350",    "1998-1-20",   "1998-13-01", "2021-02-29",
        "0100-02-29", "2100-02-29",  " 2024-01-15", "2024-00-15", "2024-01-00",
        "",           "2020-01-01Z", "12020-01-01", "2023-W01",   "2020-11-28T23:55:45Z"}},
      {"time",
       {"08:30:06Z", "23:59:60Z", "23:59:60+00:00", "23:20:50.52Z", "08:30:06.283185Z",
        "08:30:06+00:20", "08:30:06-08:00", "12:34:56-00:00", "08:30:06z"},
       {"008:030:006Z",   "8:3:6Z",          "22:59:60Z",      "23:58:60Z",
        "22:59:60+00:00", "23:59:60+01:00",  "23:59:60-00:30", "08:30:06-8:000",
        "24:00:00Z",      "00:60:00Z",       "00:00:61Z",      "01:02:03+24:00",
        "01:02:03+00:60", "01:02:03Z+00:30", "08:30:06 PST",   "01:01:01,1111",
        "12:00:00",       "12:00:00.52",     "08:30:06#00:20", "2020-11-28T23:55:45Z",
        "08:30:06+0130",  "08:30:06+01",     "08:30:06Z\n"}},
      {"duration",
       {"P4DT12H30M5S", "P4Y", "PT0S", "P0D", "P1M", "PT36H", "P2W", "P1Y2M3D", "PT1H2M"},
       {"PT1D", "P", "P1YT", "PT", "P2D1Y", "P1D2H", "P2S", "P1Y2W", "P2W1D", "1Y", "P1"}},
      {"email",
       {"joe.bloggs@example.com", "te~st@example.com", "~test@example.com", "test~@example.com",
        "te.s.t@example.com", "joe.bloggs@sub.example.com"},
       {"2962", ".test@example.com", "test.@example.com", "te..st@example.com",
        "joe.bloggs@invalid=domain.com", "joe.bloggs@-example.com"}},
      {"hostname",
       {"www.example.com", "xn--4gbwdl.xn--wgbh1c", "hostname", "host-name", "h0stn4me", "1host",
        "hostnam3", "a.b.c.d"},
       {"-a-host-name-that-starts-with--", "not_a_valid_host_name",
        "a-vvvvvvvvvvvvvvvveeeeeeee"
        "rrrrrrrrrrrrrrryyyyyyyyyyyyyyyy-long-host-name-component",
        "-hostname", "hostname-", "_hostname", "hostname_", "host_name", "", ".", "ex ample.com",
        "example..com"}},
      {"ipv4",
       {"192.168.0.1", "0.0.0.0", "255.255.255.255", "87.10.0.1"},
       {"127.0.0.0.1", "256.256.256.256", "127.0", "0x7f000001", "2130706433", "087.10.0.1",
        "1.2.3.4\u09EA", "192.168.1.0/24"}},
      {"ipv6",
       {"::1", "::abef", "::", "::42:ff:1", "d6::", "1:d6::42", "1::d6:192.168.0.1",
        "1:2::192.168.0.1", "::ffff:192.168.0.1", "1:2:3:4:5:6:7:8",
        "1000:1000:1000:1000:1000:1000:255.255.255.255"},
       {"12345::",
        "::abcef",
        "1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1",
        "::laptop",
        ":2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:",
        ":2:3:4::8",
        "1::d6::42",
        "1::2:192.168.256.1",
        "1::2:192.168.ff.1",
        "1:2:3:4:5:::8",
        "1:2:3:4:5:6:7",
        "1",
        "127.0.0.1",
        "1:2:3:4:1.2.3",
        "  ::1",
        "::1  ",
        "fe80::/64",
        "fe80::a%eth1",
        "100:100:100:100:100:100:255.255.255.255.255",
        "100:100:100:100:100:100:100:255.255.255.255",
        "::ffff:256.1.1.1"}},
      {"uuid",
       {"2EB8AA08-AA98-11EA-B4AA-73B441D16380", "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
        "00000000-0000-0000-0000-000000000000"},
       {"2eb8aa08-aa98-11ea-b4aa-73b441d1638", "2eb8aa08-aa98-11ea-73b441d16380",
        "2eb8aa08-aa98-11ea-b4ga-73b441d16380", "2eb8aa08aa9811eab4aa73b441d16380",
        "2eb8-aa08-aa98-11ea-b4aa73b44-1d16380", "2eb8aa08aa9811eab4aa73b441d16380----"}},
      {"uri",
       {"http://foo.bar/?baz=qux#quux", "http://foo.com/blah_(wikipedia)_blah#cite-1",
        "http://foo.bar/?q=Test%20URL-encoded%20stuff",
        "http://-.~_!$&'()*+,;=:%40:80%2f::::::@e"
        "xample.com",
        "http://223.255.255.254", "ftp://ftp.is.co.za/rfc/rfc1808.txt",
        "mailto:John.Doe@example.com", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
        "tel:+1-816-555-1212"},
       {"//foo.bar/?baz=qux#quux", "/abc", "\\\\WINDOWS\\fileshare", "abc",
        "http:// shouldfail.com", ":// should fail", "bar,baz:foo",
        "https://example.com/foo#bar#baz"}},
      {"uri-reference",
       {"http://foo.bar/?baz=qux#quux", "//foo.bar/?baz=qux#quux", "/abc", "abc", "#fragment"},
       {"\\\\WINDOWS\\fileshare", "#frag\\ment", "a:b:c d", "#a#b"}},
  };
  return cases;
}

}  // namespace

TEST_CASE("JSON Schema: formats are enforced as regular languages, unknown ones ignored",
          "[unit][constrain]") {
  for (const auto& c : format_cases()) {
    INFO("format " << c.format);
    PushdownParser p(json_schema_grammar(Json{{"type", "string"}, {"format", c.format}}));
    for (const auto& s : c.valid) {
      INFO("valid " << s);
      CHECK(p.matches(python_json_dumps(Json(s))));
    }
    for (const auto& s : c.invalid) {
      INFO("invalid " << s);
      CHECK_FALSE(p.matches(python_json_dumps(Json(s))));
    }
  }
  // A format is an annotation for other types, and a format nobody defined is ignored.
  PushdownParser other(json_schema_grammar(Json{{"format", "date"}}));
  CHECK(other.matches("12"));
  CHECK_FALSE(other.matches("\"x\""));
  PushdownParser unknown(json_schema_grammar(Json{{"type", "string"}, {"format", "x-custom"}}));
  CHECK(unknown.matches("\"anything\""));
}

TEST_CASE("JSON Schema: the suite's optional/format files, where present", "[constrain]") {
  const std::filesystem::path dir = suite_dir() / "draft2020-12" / "optional" / "format";
  if (!std::filesystem::is_directory(dir)) {
    WARN("SKIPPED: no optional/format folder in " << suite_dir().string());
    return;
  }
  int invalid_accepted = 0, checked = 0;
  for (const auto& path : list_json_files({dir.string()})) {
    std::ifstream in(path);
    for (const auto& group : Json::parse(in)) {
      PushdownParser p(json_schema_grammar(group["schema"]));
      for (const auto& t : group["tests"]) {
        ++checked;
        const bool ok = p.matches(python_json_dumps(t["data"]));
        if (ok && !t["valid"].get<bool>()) {
          ++invalid_accepted;
          UNSCOPED_INFO(path << ": " << t["description"] << " accepted");
        }
      }
    }
  }
  CHECK(checked > 0);
  CHECK(invalid_accepted == 0);
}

TEST_CASE("counted repetition is written with doubling rules, not copies", "[unit][constrain]") {
  // The grammar's size, not the compile time (tests assert no wall time): 100,000 unrolled
  // copies would be 100,000 expressions; the doubling rules are a few per binary digit.
  const Grammar g_small = json_schema_grammar(Json{{"type", "string"}, {"maxLength", 10}});
  const Grammar g_large =
      json_schema_grammar(Json{{"type", "string"}, {"minLength", 3}, {"maxLength", 100000}});
  CHECK(g_large.exprs.size() < g_small.exprs.size() + 400);
  auto large = std::make_unique<PushdownParser>(g_large);
  CHECK(large->matches("\"abc\""));
  CHECK_FALSE(large->matches("\"ab\""));
  // The exact bound, on a count the rules write too (above the unrolling budget).
  PushdownParser bound(json_schema_grammar(Json{{"type", "string"}, {"maxLength", 5000}}));
  CHECK(bound.matches("\"" + std::string(5000, 'x') + "\""));
  CHECK_FALSE(bound.matches("\"" + std::string(5001, 'x') + "\""));
  // Every count of a bounded repeat, across the binary boundaries of the rules.
  for (const auto& [lo, hi] : std::vector<std::pair<int, int>>{{0, 300}, {5, 2100}, {257, 1500}}) {
    PushdownParser p(regex_grammar(fmt::format("(ab){{{},{}}}", lo, hi)));
    for (int n :
         {0, 1, 4, 5, 6, 255, 256, 257, 299, 300, 301, 1023, 1024, 1500, 1501, 2100, 2101}) {
      std::string s;
      for (int i = 0; i < n; ++i) s += "ab";
      INFO(lo << ".." << hi << " n=" << n);
      CHECK(p.matches(s) == (n >= lo && n <= hi));
    }
  }
  // An array of many items of a large item schema stays small too.
  PushdownParser arr(json_schema_grammar(Json::parse(
      R"({"type":"array","maxItems":5000,"items":{"type":"string","pattern":"^[a-z]{1,40}$"}})")));
  CHECK(arr.matches("[\"ab\", \"c\"]"));
  CHECK_FALSE(arr.matches("[\"ab\", \"C\"]"));
}

TEST_CASE("counted repetition of an item that can match the empty string", "[unit][constrain]") {
  // X{m,n} with X nullable is X'{0,n}, X' being X without the empty string. Written with the
  // doubling rules as it stands, every byte's closure would thread the empty string through
  // 2^17 stacks (the fuzzer's [a"...]+(|){207207} took 32 s); each match() below would hang.
  PushdownParser nothing(regex_grammar("[ab]+(|){207207}"));
  CHECK(nothing.matches("abba"));
  CHECK_FALSE(nothing.matches(""));
  PushdownParser optional(regex_grammar("(a|){100000}"));
  CHECK(optional.matches(""));
  CHECK(optional.matches(std::string(100000, 'a')));
  CHECK_FALSE(optional.matches(std::string(100001, 'a')));
  PushdownParser branches(regex_grammar("(ab?|c*){3000,5000}d"));
  CHECK(branches.matches("d"));  // c* lets every one of the 3000 items be empty
  CHECK(branches.matches("abaccccabd"));
  CHECK_FALSE(branches.matches("bd"));
  std::string many;
  for (int i = 0; i < 5001; ++i) many += "ab";
  CHECK_FALSE(branches.matches(many + "d"));  // 5001 non-empty items
  CHECK(branches.matches(many.substr(2) + "d"));
  // A nullable sequence has no such local rewrite: refused in one line, not compiled slowly.
  try {
    (void)regex_grammar("(a?b?){5000}");
    FAIL("a nullable sequence repeated 5000 times compiled");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("can match the empty string"));
  }
  // In GBNF the item may call a rule defined further down: decided when the parser compiles.
  CHECK_THROWS_WITH(PushdownParser(parse_gbnf("root ::= x{5000} [a]+\nx ::= \"b\" | \"\"\n")),
                    Catch::Matchers::Contains("can match the empty string"));
  // The counter's own rules sit between the named ones: an unknown rule after it is still
  // named at its place (the fuzzer found this read past the table of first uses), and the
  // counter's rules cannot be called by name.
  CHECK_THROWS_WITH(
      parse_gbnf("root ::= \"a\"{5000} d"),
      Catch::Matchers::Contains(":1:20:") && Catch::Matchers::Contains("unknown rule 'd'"));
  CHECK_THROWS_WITH(parse_gbnf("root ::= \"a\"{5000} count1_x0"),
                    Catch::Matchers::Contains("unknown rule 'count1_x0'"));
  PushdownParser later(parse_gbnf("root ::= x{5000} [a]+\nx ::= \"b\" | \"c\"\n"));
  CHECK(later.matches(std::string(5000, 'b') + "a"));
  CHECK_FALSE(later.matches(std::string(4999, 'b') + "a"));
}

TEST_CASE("JSON Schema: enum/const with other keywords, oneOf as anyOf, $anchor",
          "[unit][constrain]") {
  auto compile = [](const std::string& s, const JsonSchemaLimits& limits = {}) {
    return PushdownParser(json_schema_grammar(Json::parse(s), limits));
  };
  // The values the siblings allow: not, minLength, format.
  PushdownParser e =
      compile(R"({"enum":["a","bb","ccc","2024-01-01",1],"not":{"enum":["bb",1]},"minLength":1})");
  CHECK(e.matches("\"a\""));
  CHECK(e.matches("\"ccc\""));
  CHECK_FALSE(e.matches("\"bb\""));
  CHECK_FALSE(e.matches("1"));
  PushdownParser f = compile(R"({"enum":["x","2024-01-01"],"format":"date"})");
  CHECK(f.matches("\"2024-01-01\""));
  CHECK_FALSE(f.matches("\"x\""));
  PushdownParser c = compile(R"({"enum":["abc","ab"],"maxLength":2,"readOnly":true})");
  CHECK_FALSE(c.matches("\"abc\""));
  CHECK(c.matches("\"ab\""));
  // Overlapping oneOf: refused unless asked to be read as anyOf.
  const std::string overlap = R"({"oneOf":[{"type":"integer"},{"minimum":2}]})";
  CHECK_THROWS_WITH(compile(overlap), Contains("'oneOf'"));
  JsonSchemaLimits any;
  any.one_of_as_any_of = true;
  PushdownParser o = compile(overlap, any);
  CHECK(o.matches("1"));
  CHECK(o.matches("2.5"));
  // $anchor and draft-07 "$id": "#name".
  PushdownParser a = compile(
      R"({"$defs":{"n":{"$anchor":"num","type":"integer"}},"properties":{"x":{"$ref":"#num"}}})");
  CHECK(a.matches("{\"x\": 3}"));
  CHECK_FALSE(a.matches("{\"x\": \"3\"}"));
  PushdownParser d7 =
      compile(R"({"definitions":{"s":{"$id":"#str","type":"string"}},"$ref":"#str"})");
  CHECK(d7.matches("\"q\""));
  CHECK_THROWS_WITH(compile(R"({"$ref":"#nowhere"})"), Contains("no $anchor"));
}

TEST_CASE("JSON Schema: patternProperties", "[unit][constrain]") {
  auto compile = [](const std::string& s) {
    return PushdownParser(json_schema_grammar(Json::parse(s)));
  };
  // Closed: listed properties, or keys a pattern matches with the pattern's schema.
  PushdownParser closed = compile(R"({"type":"object","properties":{"id":{"type":"integer"}},
      "patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false})");
  CHECK(closed.matches("{\"id\": 1, \"x-a\": \"s\", \"x-b\": \"t\"}"));
  CHECK(closed.matches("{\"x-a\": \"s\"}"));
  CHECK_FALSE(closed.matches("{\"x-a\": 1}"));
  CHECK_FALSE(closed.matches("{\"y\": \"s\"}"));
  // Without listed properties, counted by minProperties / maxProperties.
  PushdownParser free =
      compile(R"({"type":"object","patternProperties":{"[0-9]$":{"type":"integer"}},
      "additionalProperties":false,"maxProperties":2})");
  CHECK(free.matches("{\"a1\": 1, \"b2\": 2}"));
  CHECK_FALSE(free.matches("{\"a1\": 1, \"b2\": 2, \"c3\": 3}"));
  CHECK_FALSE(free.matches("{\"a\": 1}"));
  // Open: keys that match no pattern are refused (a subset), never let through unchecked.
  PushdownParser open = compile(R"({"patternProperties":{"^n":{"type":"number"}}})");
  CHECK(open.matches("{\"n1\": 2.5}"));
  CHECK_FALSE(open.matches("{\"n1\": \"x\"}"));
  // Patterns that constrain nothing are no constraint at all.
  PushdownParser any = compile(R"({"patternProperties":{"^a":{}}})");
  CHECK(any.matches("{\"b\": 1}"));
  // A listed name that a pattern matches would need both schemas: refused.
  CHECK_THROWS_WITH(
      compile(R"({"properties":{"x-a":{}},"patternProperties":{"^x-":{"type":"string"}}})"),
      Contains("matches a listed property ('x-a')"));
}

TEST_CASE("JSON mode (--json-mode) is an object, as OpenAI's JSON mode is", "[unit][constrain]") {
  PushdownParser p(compile_constraint(ConstraintKind::json_mode, "", "--json-mode"));
  CHECK(p.matches("{}"));
  CHECK(p.matches("{\"a\": [1, true, null]}"));
  for (const char* bad : {"true", "null", "0", "[]", "\"x\""}) {
    INFO(bad);
    CHECK_FALSE(p.matches(bad));
  }
}

TEST_CASE("JSON Schema: minProperties / maxProperties over a closed object's listed properties",
          "[unit][constrain]") {
  auto compile = [](const std::string& s) {
    return PushdownParser(json_schema_grammar(Json::parse(s)));
  };
  PushdownParser p = compile(R"({"type":"object","properties":{"a":{},"b":{},"c":{}},
      "required":["a"],"additionalProperties":false,"minProperties":2,"maxProperties":2})");
  CHECK(p.matches("{\"a\": 1, \"b\": 2}"));
  CHECK(p.matches("{\"c\": 1, \"a\": 2}"));
  CHECK_FALSE(p.matches("{\"a\": 1}"));
  CHECK_FALSE(p.matches("{\"a\": 1, \"b\": 2, \"c\": 3}"));
  // With other members allowed, the count would include them: still refused.
  CHECK_THROWS_WITH(compile(R"({"properties":{"a":{}},"minProperties":2})"),
                    Contains("'minProperties'"));
  CHECK_THROWS_WITH(compile(R"({"properties":{"a":{}},"maxProperties":2})"),
                    Contains("'maxProperties'"));
}
