// JSON Schema, phase 2: typed specs written as grammar rules, one emit function per kind. The
// specs are already checked (json_schema_spec.cpp): nothing here throws.
#include <cmath>
#include <variant>

#include <fmt/format.h>

#include "inferlab/constrain/json_schema_spec.hpp"
#include "inferlab/constrain/object_members.hpp"
#include "inferlab/constrain/regex.hpp"

namespace inferlab {

using Json = nlohmann::ordered_json;

namespace {

// Expressions reserved in a schema's grammar before emitting (a few pages).
constexpr std::size_t kReservedExprs = 1024;

class SchemaEmitter {
 public:
  SchemaEmitter(const JsonSchemaSpecs& specs, const JsonSchemaLimits& limits)
      : specs_(specs), limits_(limits), rule_of_(specs.shared.size(), -1) {
    // A typical schema's grammar has several hundred expressions: room for them up front
    // spares the pool's doublings (each a copy into fresh memory).
    g_.exprs.reserve(kReservedExprs);
  }

  // The grammar of the specs' root.
  Grammar schema() {
    g_.root = g_.add_rule("root");
    g_.define(g_.root, emit(specs_.root));
    return std::move(g_);
  }

  // The grammar of any JSON value.
  Grammar any_value() {
    g_.root = g_.add_rule("root");
    g_.define(g_.root, json_value());
    return std::move(g_);
  }

 private:
  const JsonSchemaSpecs& specs_;
  const JsonSchemaLimits& limits_;
  Grammar g_;
  std::vector<int> rule_of_;  // shared subschema -> its rule, -1 until first called
  int shared_rules_ = 0;      // rules made for shared subschemas so far
  int ws_ = -1, value_ = -1, string_ = -1, char_ = -1, number_ = -1, integer_ = -1;
  FreeKeyRules free_keys_;  // the rules every additional member's key shares

  int ref(int rule) { return g_.ref(rule); }
  int lit(std::string_view s) { return g_.literal(s); }
  int comma() { return g_.seq({ws(), lit(","), ws()}); }
  int member(int key, int value) { return g_.seq({key, ws(), lit(":"), ws(), value}); }

  // The rules of plain JSON (JSON mode uses them whole; schemas reuse the pieces), each made
  // the first time it is called: a schema that never calls one (a boolean, an object of
  // strings without an `any` value) compiles and trims no automaton for it.
  int ws() {
    if (ws_ < 0) {
      ws_ = g_.add_rule("ws");
      ByteSet sp;
      for (unsigned char c : {' ', '\t', '\n', '\r'}) sp.add(c);
      g_.define(ws_, g_.repeat(g_.bytes(sp), 0, limits_.max_whitespace));
    }
    return ref(ws_);
  }

  int json_char() {
    if (char_ >= 0) return ref(char_);
    char_ = g_.add_rule("char");
    const int hex =
        g_.alt({g_.byte_range('0', '9'), g_.byte_range('a', 'f'), g_.byte_range('A', 'F')});
    ByteSet not_d;  // hex digits other than d/D: a \u escape outside the surrogates
    not_d.add_range('0', '9');
    not_d.add_range('a', 'c');
    not_d.add_range('A', 'C');
    not_d.add_range('e', 'f');
    not_d.add_range('E', 'F');
    ByteSet d;
    d.add('d');
    d.add('D');
    ByteSet hi_sur, lo_sur, low_half;
    for (unsigned char c : {'8', '9', 'a', 'b', 'A', 'B'}) hi_sur.add(c);
    for (unsigned char c : {'c', 'd', 'e', 'f', 'C', 'D', 'E', 'F'}) lo_sur.add(c);
    low_half.add_range('0', '7');
    const int u_plain = g_.alt({g_.seq({g_.bytes(not_d), hex, hex, hex}),
                                g_.seq({g_.bytes(d), g_.bytes(low_half), hex, hex})});
    const int u_pair = g_.seq({g_.bytes(d), g_.bytes(hi_sur), hex, hex, lit("\\u"), g_.bytes(d),
                               g_.bytes(lo_sur), hex, hex});
    ByteSet simple;
    for (unsigned char c : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) simple.add(c);
    const int escape = g_.seq(
        {lit("\\"), g_.alt({g_.bytes(simple), g_.seq({lit("u"), g_.alt({u_plain, u_pair})})})});
    // One character: raw UTF-8 except '"', '\\' and control characters, or an escape.
    g_.define(char_, g_.alt({utf8_range(g_, 0x20, 0x21), utf8_range(g_, 0x23, 0x5B),
                             utf8_range(g_, 0x5D, 0x10FFFF), escape}));
    return ref(char_);
  }

  int json_string() {
    if (string_ < 0) {
      string_ = g_.add_rule("string");
      g_.define(string_, g_.seq({lit("\""), g_.repeat(json_char(), 0, -1), lit("\"")}));
    }
    return ref(string_);
  }

  int int_part() {
    return g_.alt(
        {lit("0"), g_.seq({g_.byte_range('1', '9'), g_.repeat(g_.byte_range('0', '9'), 0, -1)})});
  }

  int json_number() {
    if (number_ >= 0) return ref(number_);
    number_ = g_.add_rule("number");
    const int digits = g_.repeat(g_.byte_range('0', '9'), 1, -1);
    ByteSet e, pm;
    e.add('e');
    e.add('E');
    pm.add('+');
    pm.add('-');
    g_.define(
        number_,
        g_.seq({g_.repeat(lit("-"), 0, 1), int_part(), g_.repeat(g_.seq({lit("."), digits}), 0, 1),
                g_.repeat(g_.seq({g_.bytes(e), g_.repeat(g_.bytes(pm), 0, 1), digits}), 0, 1)}));
    return ref(number_);
  }

  int json_integer() {
    if (integer_ < 0) {
      integer_ = g_.add_rule("integer");
      g_.define(integer_,
                g_.seq({g_.repeat(lit("-"), 0, 1), int_part(), integer_zero_fraction(g_)}));
    }
    return ref(integer_);
  }

  int json_value() {
    if (value_ >= 0) return ref(value_);
    value_ = g_.add_rule("value");
    const auto any_member = [this] {
      const int value = ref(value_);  // the value's expression first, then the key's
      return member(json_string(), value);
    };
    const int object = g_.seq(
        {lit("{"), ws(),
         g_.repeat(g_.seq({any_member(), g_.repeat(g_.seq({comma(), any_member()}), 0, -1)}), 0, 1),
         ws(), lit("}")});
    const int array = g_.seq(
        {lit("["), ws(),
         g_.repeat(g_.seq({ref(value_), g_.repeat(g_.seq({comma(), ref(value_)}), 0, -1)}), 0, 1),
         ws(), lit("]")});
    g_.define(value_, g_.alt({object, array, json_string(), json_number(), lit("true"),
                              lit("false"), lit("null")}));
    return ref(value_);
  }

  int emit(SpecId id) {
    return std::visit([this](const auto& spec) { return emit(spec); },
                      specs_.specs[static_cast<std::size_t>(id)]);
  }

  int emit(const AnySpec&) { return json_value(); }
  int emit(const NothingSpec&) { return g_.alt({}); }
  int emit(const NullSpec&) { return lit("null"); }
  int emit(const BooleanSpec&) { return g_.alt({lit("true"), lit("false")}); }

  // A shared subschema's rule is made (and its body written) the first time it is called.
  int emit(const RefSpec& r) {
    int& rule = rule_of_[static_cast<std::size_t>(r.target)];
    if (rule < 0) {
      rule = g_.add_rule(fmt::format("schema{}", shared_rules_++));
      g_.define(rule, emit(specs_.shared[static_cast<std::size_t>(r.target)]));
    }
    return ref(rule);
  }

  int emit(const AnyOfSpec& a) {
    std::vector<int> alts;
    for (const SpecId o : a.options) alts.push_back(emit(o));
    return g_.alt(std::move(alts));
  }

  int emit(const EnumSpec& e) {
    std::vector<int> alts;
    for (const Json& v : e.values) alts.push_back(literal_value(v));
    return g_.alt(std::move(alts));
  }

  // A JSON value as json.dumps writes it, where an integral number may also be written the
  // other way (1 == 1.0 in JSON Schema), at any depth, and a small object's keys in any order.
  int literal_value(const Json& v) {
    if (v.is_object() && !v.empty() &&
        static_cast<int>(v.size()) <= limits_.max_free_order_properties) {
      std::vector<int> members;
      for (const auto& [k, x] : v.items())
        members.push_back(g_.seq({lit(Json(k).dump(-1, ' ', false) + ": "), literal_value(x)}));
      return g_.seq({lit("{"),
                     members_in_any_order(g_, members, std::vector<bool>(members.size(), false), -1,
                                          lit(", ")),
                     lit("}")});
    }
    if (v.is_object()) {
      std::vector<int> items{lit("{")};
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first) items.push_back(lit(", "));
        first = false;
        items.push_back(lit(Json(k).dump(-1, ' ', false) + ": "));
        items.push_back(literal_value(x));
      }
      items.push_back(lit("}"));
      return g_.seq(std::move(items));
    }
    if (v.is_array()) {
      std::vector<int> items{lit("[")};
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) items.push_back(lit(", "));
        items.push_back(literal_value(v[i]));
      }
      items.push_back(lit("]"));
      return g_.seq(std::move(items));
    }
    const std::string text = python_json_dumps(v);
    if (v.is_number_integer()) return g_.alt({lit(text), lit(text + ".0")});
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
        std::abs(v.get<double>()) < 1e15) {
      return g_.alt({lit(text), lit(fmt::format("{}", static_cast<long long>(v.get<double>())))});
    }
    return lit(text);
  }

  int emit(const StringSpec& s) {
    if (!s.regexes.empty()) {
      const int body = compile_string_language(g_, s.regexes, s.min_length, s.max_length,
                                               RegexEncoding::json_string);
      return g_.seq({lit("\""), body, lit("\"")});
    }
    if (s.min_length == 0 && s.max_length < 0) return json_string();
    return g_.seq({lit("\""), g_.repeat(json_char(), s.min_length, s.max_length), lit("\"")});
  }

  int emit(const IntegerSpec& n) {
    if (n.multiple_of > 0) return multiple_of(g_, n.multiple_of);
    if (n.bounded) return integer_range(g_, n.range);
    return json_integer();
  }

  int emit(const NumberSpec& n) { return n.bounded ? decimal_range(g_, n.range) : json_number(); }

  int emit(const ObjectSpec& o) {
    std::vector<int> members;
    std::vector<bool> optional;
    std::vector<std::string> names;
    std::vector<std::uint64_t> needs;
    for (const auto& p : o.properties) {
      const int value = emit(p.value);  // the value's expressions first, then the key's
      members.push_back(member(lit(Json(p.name).dump(-1, ' ', false)), value));
      optional.push_back(!p.required);
      names.push_back(p.name);
      needs.push_back(p.needs);
    }
    std::vector<int> extras;  // the forms of one additional member (none: none is allowed)
    if (o.additional >= 0) {
      const int value = emit(o.additional);
      extras.push_back(member(key_other_than(g_, names, &free_keys_), value));
    }
    for (const auto& [pattern, value] : o.patterns)
      extras.push_back(pattern_member(pattern, value));
    const int extra = extras.empty() ? -1 : g_.alt(std::move(extras));
    if (o.any_order) {
      return g_.seq({lit("{"), ws(),
                     members_in_any_order(g_, members, optional, extra, comma(), needs,
                                          o.min_members, o.max_members),
                     ws(), lit("}")});
    }
    const int body = members_in_order(g_, members, optional, extra, [this] { return comma(); });
    return g_.seq({lit("{"), ws(), body, ws(), lit("}")});
  }

  // A member whose key the regex `pattern` matches (anywhere in the key, as JSON Schema's
  // patterns do), its value of schema `value`.
  int pattern_member(const std::string& pattern, SpecId value) {
    const int v = emit(value);
    const int key = compile_regex(g_, pattern, RegexEncoding::json_string, true);
    return member(g_.seq({lit("\""), key, lit("\"")}), v);
  }

  int emit(const FreeObjectSpec& o) {
    const int lo = o.min_properties, hi = o.max_properties;
    const int empty_object = g_.seq({lit("{"), ws(), lit("}")});
    if (hi == 0) return empty_object;
    std::vector<int> forms;  // the forms of one member
    if (o.value >= 0)
      forms.push_back(member(o.key >= 0 ? emit(o.key) : json_string(), emit(o.value)));
    for (const auto& [pattern, value] : o.patterns) forms.push_back(pattern_member(pattern, value));
    const int m = g_.alt(std::move(forms));
    const int rest = g_.repeat(g_.seq({comma(), m}), std::max(0, lo - 1), hi < 0 ? -1 : hi - 1);
    const int members = g_.seq({lit("{"), ws(), m, rest, ws(), lit("}")});
    return lo == 0 ? g_.alt({empty_object, members}) : members;
  }

  int emit(const ArraySpec& a) {
    const int n_fixed = static_cast<int>(a.prefix.size());
    const int lo = a.min_items, hi = a.max_items;
    const auto prefix = [&](int i) { return emit(a.prefix[static_cast<std::size_t>(i)]); };
    // tail: the items after the i-th, from the last prefix item back to the first.
    int tail = a.rest < 0 ? g_.empty()
                          : g_.repeat(g_.seq({comma(), emit(a.rest)}), std::max(0, lo - n_fixed),
                                      hi < 0 ? -1 : hi - n_fixed);
    for (int i = n_fixed; i-- > 1;) {
      const int with = g_.seq({comma(), prefix(i), tail});
      tail = i >= lo ? g_.alt({g_.empty(), with}) : with;
    }
    int body;
    if (n_fixed >= 1) {
      body = g_.seq({prefix(0), tail});
    } else {  // no prefix: the first item is the repeated schema too
      body = hi == 0 ? g_.alt({})
                     : g_.seq({emit(a.rest), g_.repeat(g_.seq({comma(), emit(a.rest)}),
                                                       std::max(0, lo - 1), hi < 0 ? -1 : hi - 1)});
    }
    if (lo == 0) body = g_.alt({g_.empty(), body});
    return g_.seq({lit("["), ws(), body, ws(), lit("]")});
  }

  int emit(const ContainsArraySpec& a) {
    const int match = emit(a.match);
    // Items before, between and after the matches are any items (they may match too).
    const int skip = g_.repeat(g_.seq({emit(a.item), comma()}), 0, -1);
    std::vector<int> parts{skip, match};
    for (int k = 1; k < a.min_contains; ++k) parts.push_back(g_.seq({comma(), skip, match}));
    parts.push_back(g_.repeat(g_.seq({comma(), emit(a.item)}), 0, -1));
    return g_.seq({lit("["), ws(), g_.seq(std::move(parts)), ws(), lit("]")});
  }

  int emit(const UniqueArraySpec& a) {
    std::vector<int> arrays;
    for (const auto& values : a.arrays) {
      std::vector<int> items{lit("["), ws()};
      for (std::size_t i = 0; i < values.size(); ++i) {
        if (i) items.push_back(comma());
        items.push_back(literal_value(values[i]));
      }
      items.push_back(ws());
      items.push_back(lit("]"));
      arrays.push_back(g_.seq(std::move(items)));
    }
    return g_.alt(std::move(arrays));
  }
};

}  // namespace

Grammar emit_json_schema(const JsonSchemaSpecs& specs, const JsonSchemaLimits& limits) {
  return SchemaEmitter(specs, limits).schema();
}

Grammar emit_json_value(const JsonSchemaLimits& limits) {
  static const JsonSchemaSpecs kNone;
  return SchemaEmitter(kNone, limits).any_value();
}

}  // namespace inferlab
