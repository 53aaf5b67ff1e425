// JSON Schema -> byte grammar. Each subschema reached by $ref gets its own rule (so recursive
// schemas stay finite); allOf and $ref-with-siblings are merged into one schema first; anyOf
// distributes its siblings over its branches.
#include "inferlab/constrain/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "inferlab/constrain/regex.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab {

using Json = nlohmann::ordered_json;

namespace {

// Keywords that never change which instances are valid.
const std::set<std::string> kAnnotations = {
    "$schema",  "$id",         "$comment",         "$anchor",         "$vocabulary",
    "title",    "description", "default",          "examples",        "deprecated",
    "readOnly", "writeOnly",   "contentMediaType", "contentEncoding", "contentSchema",
    "$defs",    "definitions"};
// Keywords we know and cannot honour in general: a compile error names them.
const std::set<std::string> kUnsupported = {"patternProperties",
                                            "propertyNames",
                                            "dependentRequired",
                                            "dependencies",
                                            "dependentSchemas",
                                            "if",
                                            "then",
                                            "else",
                                            "unevaluatedProperties",
                                            "unevaluatedItems",
                                            "$dynamicRef",
                                            "$dynamicAnchor",
                                            "$recursiveRef",
                                            "$recursiveAnchor"};
const std::vector<std::string> kAllTypes = {"null",  "boolean", "object",
                                            "array", "string",  "number"};

bool is_annotation(const std::string& k) { return kAnnotations.count(k) > 0; }

std::string python_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  // Shortest repr that round-trips, as Python's float.__repr__.
  std::string s;
  for (int prec = 1; prec <= 17; ++prec) {
    s = fmt::format("{:.{}g}", v, prec);
    if (std::strtod(s.c_str(), nullptr) == v) break;
  }
  const auto e = s.find('e');
  std::string mant = e == std::string::npos ? s : s.substr(0, e);
  std::string exp = e == std::string::npos ? "" : s.substr(e + 1);
  if (!exp.empty()) {
    int x = std::stoi(exp);
    // Python uses exponent form only when exp < -4 or exp >= 16.
    if (x >= -4 && x < 16)
      return fmt::format("{:.{}f}", v, std::max(0, -x + static_cast<int>(mant.size()) - 2 + 1));
    return fmt::format("{}e{}{:02d}", mant, x < 0 ? '-' : '+', std::abs(x));
  }
  if (mant.find('.') == std::string::npos) mant += ".0";
  return mant;
}

}  // namespace

std::string python_json_dumps(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first) out += ", ";
        first = false;
        out += Json(k).dump(-1, ' ', false) + ": " + python_json_dumps(x);
      }
      return out + "}";
    }
    case Json::value_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += python_json_dumps(v[i]);
      }
      return out + "]";
    }
    case Json::value_t::number_float:
      return python_float(v.get<double>());
    default:
      return v.dump(-1, ' ', false);
  }
}

namespace {

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const JsonSchemaLimits& limits) : root_(root), limits_(limits) {
    if (limits_.max_free_order_properties < 0 || limits_.max_free_order_properties > 16) {
      throw Error(
          fmt::format("max_free_order_properties must be in [0, 16] (2^n grammar rules), got {}",
                      limits_.max_free_order_properties));
    }
    build_common();
  }

  Grammar compile() {
    g_.root = g_.add_rule("root");
    g_.define(g_.root, compile_schema(root_, 0));
    return std::move(g_);
  }

  Grammar json_mode() {
    g_.root = g_.add_rule("root");
    g_.define(g_.root, ref(value_));
    return std::move(g_);
  }

 private:
  const Json& root_;
  JsonSchemaLimits limits_;
  Grammar g_;
  std::deque<Json> owned_;              // merged schemas (stable addresses)
  std::map<const Json*, int> rule_of_;  // subschema -> its rule
  int ws_ = -1, value_ = -1, string_ = -1, char_ = -1, number_ = -1, integer_ = -1;

  int ref(int rule) { return g_.ref(rule); }
  int lit(std::string_view s) { return g_.literal(s); }

  [[noreturn]] static void unsupported(const std::string& kw, const std::string& why = "") {
    throw Error(
        fmt::format("unsupported JSON Schema keyword '{}'{}", kw, why.empty() ? "" : ": " + why));
  }

  // The rules of plain JSON (JSON mode uses them whole; schemas reuse the pieces).
  void build_common() {
    ws_ = g_.add_rule("ws");
    ByteSet sp;
    for (unsigned char c : {' ', '\t', '\n', '\r'}) sp.add(c);
    g_.define(ws_, g_.repeat(g_.bytes(sp), 0, limits_.max_whitespace));

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

    string_ = g_.add_rule("string");
    g_.define(string_, g_.seq({lit("\""), g_.repeat(ref(char_), 0, -1), lit("\"")}));

    const int digits = g_.repeat(g_.byte_range('0', '9'), 1, -1);
    const int int_part = g_.alt(
        {lit("0"), g_.seq({g_.byte_range('1', '9'), g_.repeat(g_.byte_range('0', '9'), 0, -1)})});
    ByteSet e, pm;
    e.add('e');
    e.add('E');
    pm.add('+');
    pm.add('-');
    number_ = g_.add_rule("number");
    g_.define(
        number_,
        g_.seq({g_.repeat(lit("-"), 0, 1), int_part, g_.repeat(g_.seq({lit("."), digits}), 0, 1),
                g_.repeat(g_.seq({g_.bytes(e), g_.repeat(g_.bytes(pm), 0, 1), digits}), 0, 1)}));
    integer_ = g_.add_rule("integer");
    g_.define(integer_, g_.seq({g_.repeat(lit("-"), 0, 1), int_part, zero_fraction()}));

    value_ = g_.add_rule("value");
    const int object = g_.seq(
        {lit("{"), ref(ws_),
         g_.repeat(g_.seq({member(ref(string_), ref(value_)),
                           g_.repeat(g_.seq({comma(), member(ref(string_), ref(value_))}), 0, -1)}),
                   0, 1),
         ref(ws_), lit("}")});
    const int array = g_.seq(
        {lit("["), ref(ws_),
         g_.repeat(g_.seq({ref(value_), g_.repeat(g_.seq({comma(), ref(value_)}), 0, -1)}), 0, 1),
         ref(ws_), lit("]")});
    g_.define(value_, g_.alt({object, array, ref(string_), ref(number_), lit("true"), lit("false"),
                              lit("null")}));
  }

  // "1.0" is an integer in JSON Schema (draft 6 on): a fraction of zeros is allowed.
  // (At most 8 zeros, so that a model cannot stall in "1.0000..." forever.)
  int zero_fraction() { return g_.repeat(g_.seq({lit("."), g_.repeat(lit("0"), 1, 8)}), 0, 1); }
  int comma() { return g_.seq({ref(ws_), lit(","), ref(ws_)}); }
  int member(int key, int value) { return g_.seq({key, ref(ws_), lit(":"), ref(ws_), value}); }

  // ---- $ref resolution and merging -------------------------------------------------------

  const Json& resolve(const std::string& r) {
    if (r.empty() || r[0] != '#') {
      throw Error(
          fmt::format("unsupported $ref '{}': only local references (#, #/...) are supported", r));
    }
    std::string ptr;
    for (std::size_t i = 1; i < r.size(); ++i) {  // percent-decoding (URI fragment)
      if (r[i] == '%' && i + 2 < r.size() + 0 &&
          std::isxdigit(static_cast<unsigned char>(r[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(r[i + 2]))) {
        ptr += static_cast<char>(std::stoi(r.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        ptr += r[i];
      }
    }
    if (ptr.empty()) return root_;
    if (ptr[0] != '/')
      throw Error(fmt::format("unsupported $ref '{}': anchors are not supported", r));
    try {
      const Json::json_pointer p(ptr);
      return root_.at(p);
    } catch (const std::exception&) {
      throw Error(fmt::format("$ref '{}' does not resolve to anything in the schema", r));
    }
  }

  static bool only_annotations(const Json& s, const std::set<std::string>& except = {}) {
    if (!s.is_object()) return false;
    for (const auto& [k, v] : s.items()) {
      if (!is_annotation(k) && !except.count(k)) return false;
    }
    return true;
  }

  // Inlines $ref and allOf at the top of `s` so that the result is one plain schema.
  Json flatten(const Json& s, int depth) {
    if (depth > limits_.max_depth) {
      throw Error(fmt::format("schema nested (or $ref expanded inside allOf) deeper than {} levels",
                              limits_.max_depth));
    }
    if (s.is_boolean()) return s;
    if (!s.is_object()) throw Error("a schema must be an object or a boolean");
    Json out = Json::object();
    for (const auto& [k, v] : s.items()) {
      if (k != "$ref" && k != "allOf") out[k] = v;
    }
    // then/else act only beside an if of the same schema object, and an if only with one of
    // them: dropped before merging, so that allOf [{if}, {then}] does not join them.
    if (!out.contains("if")) {
      out.erase("then");
      out.erase("else");
    } else if (!out.contains("then") && !out.contains("else")) {
      out.erase("if");
    }
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) throw Error("$ref must be a string");
      out = merge(flatten(resolve(s["$ref"].get<std::string>()), depth + 1), out);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].empty())
        throw Error("allOf must be a non-empty array");
      for (const Json& sub : s["allOf"]) out = merge(out, flatten(sub, depth + 1));
    }
    return out;
  }

  static std::vector<std::string> types_of(const Json& s) {
    if (!s.contains("type")) return kAllTypes;
    std::vector<std::string> t;
    if (s["type"].is_string()) {
      t.push_back(s["type"].get<std::string>());
    } else if (s["type"].is_array()) {
      for (const auto& x : s["type"]) {
        if (!x.is_string()) throw Error("type must be a string or an array of strings");
        t.push_back(x.get<std::string>());
      }
    } else {
      throw Error("type must be a string or an array of strings");
    }
    for (const auto& x : t) {
      if (x != "integer" && std::find(kAllTypes.begin(), kAllTypes.end(), x) == kAllTypes.end()) {
        throw Error(fmt::format("unknown type '{}'", x));
      }
    }
    return t;
  }

  // Conjunction of two flattened schemas, keyword by keyword.
  Json merge(const Json& a, const Json& b) {
    if (a.is_boolean()) return a.get<bool>() ? b : a;
    if (b.is_boolean()) return b.get<bool>() ? a : b;
    // unevaluated* depends on what the other subschemas of the same instance evaluated: it
    // cannot be merged with anything.
    for (const char* k : {"unevaluatedProperties", "unevaluatedItems"}) {
      if ((a.contains(k) && !only_annotations(b)) || (b.contains(k) && !only_annotations(a))) {
        unsupported(k, "combined with other subschemas by allOf, anyOf or $ref");
      }
    }
    // additionalProperties only sees its own schema's properties, and additionalItems its own
    // tuple: merging them with another schema's would change their meaning.
    auto names = [](const Json& s) {
      std::set<std::string> n;
      if (s.contains("properties") && s["properties"].is_object()) {
        for (const auto& [k, v] : s["properties"].items()) n.insert(k);
      }
      return n;
    };
    auto restricts = [](const Json& s) {
      return s.contains("additionalProperties") && s["additionalProperties"] != Json(true);
    };
    auto has_obj = [](const Json& s) {
      return s.contains("properties") || s.contains("additionalProperties");
    };
    if (((restricts(a) && has_obj(b)) || (restricts(b) && has_obj(a))) && names(a) != names(b)) {
      unsupported("additionalProperties",
                  "combined by allOf or $ref with a schema listing other properties");
    }
    auto tuple = [](const Json& s) {
      return s.contains("prefixItems") || s.contains("additionalItems") ||
             (s.contains("items") && s["items"].is_array());
    };
    auto has_items = [](const Json& s) {
      return s.contains("items") || s.contains("prefixItems") || s.contains("additionalItems");
    };
    if ((tuple(a) && has_items(b)) || (tuple(b) && has_items(a))) {
      unsupported(tuple(a) ? (a.contains("prefixItems") ? "prefixItems" : "items")
                           : (b.contains("prefixItems") ? "prefixItems" : "items"),
                  "a tuple combined by allOf or $ref with other item schemas");
    }
    Json out = a;
    for (const auto& [k, v] : b.items()) {
      if (!out.contains(k) || is_annotation(k)) {
        out[k] = v;
        continue;
      }
      Json& o = out[k];
      if (o == v) continue;
      if (k == "type") {
        std::vector<std::string> ta = types_of(a), tb = types_of(b), t;
        for (const auto& x : ta) {
          for (const auto& y : tb) {
            if (x == y)
              t.push_back(x);
            else if (x == "integer" && y == "number")
              t.push_back("integer");
            else if (x == "number" && y == "integer")
              t.push_back("integer");
          }
        }
        o = Json(t);
      } else if (k == "required") {
        for (const auto& x : v) {
          if (std::find(o.begin(), o.end(), x) == o.end()) o.push_back(x);
        }
      } else if (k == "properties") {
        if (a.contains("additionalProperties") || b.contains("additionalProperties")) {
          unsupported("allOf",
                      "combining objects whose properties and additionalProperties differ");
        }
        for (const auto& [pk, pv] : v.items()) {
          if (o.contains(pk))
            o[pk] = Json{{"allOf", Json::array({o[pk], pv})}};
          else
            o[pk] = pv;
        }
      } else if (k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" ||
                 k == "minProperties") {
        o = std::max(o.get<double>(), v.get<double>());
      } else if (k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" ||
                 k == "maxProperties") {
        o = std::min(o.get<double>(), v.get<double>());
      } else if (k == "items" && o.is_object() && v.is_object()) {
        o = Json{{"allOf", Json::array({o, v})}};
      } else if (k == "enum") {
        Json keep = Json::array();
        for (const auto& x : o) {
          if (std::find(v.begin(), v.end(), x) != v.end()) keep.push_back(x);
        }
        o = keep;
      } else if (k == "const") {
        out["enum"] = Json::array();  // two different constants: nothing satisfies both
        out.erase("const");
      } else if (k == "anyOf" || k == "oneOf") {
        // (A1|A2) and (B1|B2): wrap both as one allOf inside an anyOf of products.
        Json prod = Json::array();
        for (const auto& x : o) {
          for (const auto& y : v) prod.push_back(Json{{"allOf", Json::array({x, y})}});
        }
        if (k == "oneOf") unsupported("oneOf", "two oneOf lists combined by allOf");
        o = prod;
      } else {
        unsupported(k, "two different values combined by allOf or $ref");
      }
    }
    return out;
  }

  // ---- schemas -----------------------------------------------------------------------------

  int rule_for(const Json& s, int depth) {
    const auto it = rule_of_.find(&s);
    if (it != rule_of_.end()) return it->second;
    const int r = g_.add_rule(fmt::format("schema{}", rule_of_.size()));
    rule_of_[&s] = r;
    g_.define(r, compile_schema(s, depth + 1));
    return r;
  }

  int compile_schema(const Json& s, int depth) {
    if (depth > limits_.max_depth)
      throw Error(fmt::format("schema nested deeper than {} levels", limits_.max_depth));
    if (s.is_boolean()) return s.get<bool>() ? ref(value_) : g_.alt({});
    if (!s.is_object()) throw Error("a schema must be an object or a boolean");
    if ((s.contains("unevaluatedProperties") || s.contains("unevaluatedItems")) &&
        !has_applicator(s)) {
      owned_.push_back(without_unevaluated(s));
      return compile_schema(owned_.back(), depth + 1);
    }
    if (s.contains("if") && (s.contains("then") || s.contains("else"))) {
      owned_.push_back(expand_if(s));
      return compile_schema(owned_.back(), depth + 1);
    }
    if (has_schema_dependencies(s)) {
      owned_.push_back(expand_dependencies(s));
      return compile_schema(owned_.back(), depth + 1);
    }
    for (const auto& [k, v] : s.items()) {
      if (kUnsupported.count(k)) check_unsupported(s, k);
    }
    // A bare $ref keeps its own rule: recursive schemas stay finite.
    if (s.contains("$ref") && only_annotations(s, {"$ref"})) {
      if (!s["$ref"].is_string()) throw Error("$ref must be a string");
      return ref(rule_for(resolve(s["$ref"].get<std::string>()), depth));
    }
    if (s.contains("$ref") || s.contains("allOf")) {
      owned_.push_back(flatten(s, depth));
      return compile_schema(owned_.back(), depth + 1);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) return compile_any_of(s, depth);
    if (s.contains("enum") || s.contains("const")) return compile_enum(s);

    std::vector<std::string> types = types_of(s);
    if (s.contains("not")) types = subtract_not(s["not"], types);
    std::vector<int> alts;
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    for (const auto& t : types) {
      if (t == "null")
        alts.push_back(lit("null"));
      else if (t == "boolean")
        alts.push_back(g_.alt({lit("true"), lit("false")}));
      else if (t == "string")
        alts.push_back(compile_string(s));
      else if (t == "number")
        alts.push_back(compile_number(s, false));
      else if (t == "integer" && !has_number)
        alts.push_back(compile_number(s, true));
      else if (t == "object")
        alts.push_back(compile_object(s, depth));
      else if (t == "array")
        alts.push_back(compile_array(s, depth));
    }
    return g_.alt(std::move(alts));
  }

  // Keywords whose subschemas evaluate properties or items of the same instance: with none of
  // them, "unevaluated" means "not matched by properties / items of this schema itself".
  static bool has_applicator(const Json& s) {
    for (const char* k : {"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                          "dependentSchemas", "dependencies", "$ref", "$dynamicRef",
                          "$recursiveRef", "patternProperties", "contains"}) {
      if (s.contains(k)) return true;
    }
    return false;
  }

  // unevaluatedProperties becomes additionalProperties (when that is absent; else every
  // property is evaluated already and it is a no-op); unevaluatedItems becomes the schema of
  // the items after prefixItems (when items is absent; else a no-op).
  static Json without_unevaluated(const Json& s) {
    Json out = s;
    if (s.contains("unevaluatedProperties")) {
      if (!s.contains("additionalProperties"))
        out["additionalProperties"] = s["unevaluatedProperties"];
      out.erase("unevaluatedProperties");
    }
    if (s.contains("unevaluatedItems")) {
      const bool tuple7 = s.contains("items") && s["items"].is_array();
      if (tuple7 && !s.contains("additionalItems")) out["additionalItems"] = s["unevaluatedItems"];
      if (!s.contains("items")) out["items"] = s["unevaluatedItems"];
      out.erase("unevaluatedItems");
    }
    return out;
  }

  // if/then/else as (if and then) or (not if and else): the two branches never overlap, so an
  // anyOf of them is exact. `not if` stays context-free when the condition is a boolean or
  // only a type (subtract_not); any other condition is a compile error that names `if`.
  static Json expand_if(const Json& s) {
    Json rest = Json::object();
    for (const auto& [k, v] : s.items()) {
      if (k != "if" && k != "then" && k != "else") rest[k] = v;
    }
    const Json& cond = s["if"];
    const Json then_s = s.contains("then") ? s["then"] : Json(true);
    const Json else_s = s.contains("else") ? s["else"] : Json(true);
    Json branch;
    if (cond.is_boolean()) {
      branch = cond.get<bool>() ? then_s : else_s;
    } else if (only_annotations(cond, {"type"})) {
      branch = Json{
          {"anyOf", Json::array({Json{{"allOf", Json::array({cond, then_s})}},
                                 Json{{"allOf", Json::array({Json{{"not", cond}}, else_s})}}})}};
    } else {
      unsupported(
          "if",
          "a condition other than a type or a boolean (its negation is not context-free here)");
    }
    return Json{{"allOf", Json::array({rest, branch})}};
  }

  // dependentSchemas (draft-07: dependencies with schema values): when key k is present, the
  // object must also satisfy S. Exactly: (k absent) or (k present and S), where "k absent" is
  // properties {k: false}. Both branches accept every non-object, as the keyword does.
  static bool has_schema_dependencies(const Json& s) {
    if (s.contains("dependentSchemas") && s["dependentSchemas"].is_object() &&
        !s["dependentSchemas"].empty())
      return true;
    if (!s.contains("dependencies") || !s["dependencies"].is_object()) return false;
    return std::any_of(s["dependencies"].begin(), s["dependencies"].end(),
                       [](const Json& v) { return !v.is_array(); });
  }
  static Json expand_dependencies(const Json& s) {
    Json rest = Json::object();
    Json parts = Json::array();
    for (const auto& [k, v] : s.items()) {
      if (k != "dependentSchemas" && k != "dependencies") rest[k] = v;
    }
    auto add = [&](const std::string& key, const Json& sub) {
      if (sub.is_boolean() && sub.get<bool>()) return;  // asserts nothing
      const Json absent = Json{{"properties", Json{{key, false}}}};
      parts.push_back(Json{{"anyOf", Json::array({absent, Json{{"required", Json::array({key})},
                                                               {"allOf", Json::array({sub})}}})}});
    };
    if (s.contains("dependentSchemas")) {
      if (!s["dependentSchemas"].is_object()) throw Error("dependentSchemas must be an object");
      for (const auto& [k, v] : s["dependentSchemas"].items()) add(k, v);
    }
    if (s.contains("dependencies")) {
      Json lists = Json::object();  // the array form stays for compile_object
      for (const auto& [k, v] : s["dependencies"].items()) {
        if (v.is_array())
          lists[k] = v;
        else
          add(k, v);
      }
      if (!lists.empty()) rest["dependencies"] = lists;
    }
    parts.insert(parts.begin(), rest);
    return Json{{"allOf", parts}};
  }

  // Keywords that are harmless in some forms.
  static void check_unsupported(const Json& s, const std::string& k) {
    if (k == "patternProperties" && s[k].is_object() && s[k].empty()) return;
    if ((k == "dependentRequired" || k == "dependencies" || k == "dependentSchemas") &&
        s[k].is_object() && s[k].empty())
      return;
    // Lists of names: compile_object() tracks them (schema dependencies stay an error there).
    if (k == "dependentRequired") return;
    if (k == "dependencies" && s[k].is_object() &&
        std::all_of(s[k].begin(), s[k].end(), [](const Json& v) { return v.is_array(); })) {
      return;
    }
    if (k == "if" && !s.contains("then") && !s.contains("else"))
      return;                                                       // if alone asserts nothing
    if ((k == "then" || k == "else") && !s.contains("if")) return;  // ignored without if
    if (k == "propertyNames" && s[k].is_boolean() && s[k].get<bool>()) return;
    // Without listed properties, every key is free and propertyNames constrains it.
    if (k == "propertyNames" &&
        (!s.contains("properties") || (s["properties"].is_object() && s["properties"].empty())) &&
        !s.contains("patternProperties")) {
      return;
    }
    if (k == "$dynamicAnchor" || k == "$recursiveAnchor") return;  // only matter to dynamic refs
    unsupported(k);
  }

  std::vector<std::string> subtract_not(const Json& n, std::vector<std::string> types) {
    if (n.is_boolean()) {
      if (n.get<bool>()) types.clear();
      return types;
    }
    if (!only_annotations(n, {"type"}))
      unsupported("not", "only 'not' of a type (or a boolean) is supported");
    if (!n.contains("type")) {
      types.clear();  // not {} matches nothing
      return types;
    }
    for (const auto& t : types_of(n)) {
      if (t == "number") {
        std::erase(types, "number");
        std::erase(types, "integer");
      } else if (t == "integer") {
        if (std::find(types.begin(), types.end(), "integer") != types.end())
          std::erase(types, "integer");
        if (std::find(types.begin(), types.end(), "number") != types.end()) {
          unsupported("not", "'not integer' of a number is not context-free here");
        }
      } else {
        std::erase(types, t);
      }
    }
    return types;
  }

  int compile_any_of(const Json& s, int depth) {
    const bool one = s.contains("oneOf");
    if (s.contains("oneOf") && s.contains("anyOf")) {
      // anyOf and oneOf together: treat the anyOf as a sibling of the oneOf below.
    }
    const char* kw = one ? "oneOf" : "anyOf";
    const Json& branches = s[kw];
    if (!branches.is_array() || branches.empty())
      throw Error(fmt::format("{} must be a non-empty array", kw));
    Json rest = s;
    rest.erase(kw);
    std::vector<Json> merged;
    for (const Json& b : branches) {
      merged.push_back(
          only_annotations(rest) ? b : merge(flatten(rest, depth + 1), flatten(b, depth + 1)));
    }
    if (one) check_disjoint(merged, depth);
    std::vector<int> alts;
    for (std::size_t i = 0; i < merged.size(); ++i) {
      if (only_annotations(rest)) {
        alts.push_back(ref(rule_for(branches[i], depth)));
      } else {
        owned_.push_back(merged[i]);
        alts.push_back(compile_schema(owned_.back(), depth + 1));
      }
    }
    return g_.alt(std::move(alts));
  }

  // A value in the form JSON Schema equality sees: keys sorted, integral numbers as integers.
  static nlohmann::json canonical(const Json& v) {
    if (v.is_object()) {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [k, x] : v.items()) o[k] = canonical(x);
      return o;
    }
    if (v.is_array()) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& x : v) a.push_back(canonical(x));
      return a;
    }
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
        std::abs(v.get<double>()) < 1e15) {
      return static_cast<long long>(v.get<double>());
    }
    return nlohmann::json::parse(v.dump());
  }

  // oneOf equals anyOf when no instance can satisfy two branches: different types, or
  // different constants. Anything else cannot be decided here: a compile error.
  void check_disjoint(const std::vector<Json>& b, int depth) {
    auto type_set = [&](const Json& x) {
      Json f = flatten(x, depth + 1);
      std::set<std::string> t;
      if (f.is_boolean()) {
        if (f.get<bool>()) t.insert(kAllTypes.begin(), kAllTypes.end());
        return t;
      }
      for (auto& y : types_of(f)) t.insert(y == "integer" ? "number" : y);
      if (f.contains("enum") || f.contains("const")) {
        t.clear();
        const Json vals = f.contains("const") ? Json::array({f["const"]}) : f["enum"];
        for (const auto& v : vals) {
          std::string key = "=";
          key += canonical(v).dump();  // equal values (1 and 1.0, keys in any order) share a key
          t.insert(std::move(key));
        }
      }
      return t;
    };
    std::vector<std::set<std::string>> sets;
    for (const auto& x : b) sets.push_back(type_set(x));
    for (std::size_t i = 0; i < sets.size(); ++i) {
      for (std::size_t j = i + 1; j < sets.size(); ++j) {
        for (const auto& t : sets[i]) {
          const bool clash = sets[j].count(t) ||
                             (t[0] == '=' && !sets[j].empty() && sets[j].begin()->at(0) != '=') ||
                             (t[0] != '=' && !sets[j].empty() && sets[j].begin()->at(0) == '=');
          if (clash)
            unsupported("oneOf",
                        "branches that may overlap (only branches of different types or different "
                        "constants are supported)");
        }
      }
    }
  }

  // A JSON value as json.dumps writes it, where an integral number may also be written the
  // other way (1 == 1.0 in JSON Schema), at any depth.
  int literal_value(const Json& v) {
    if (v.is_object() && !v.empty() &&
        static_cast<int>(v.size()) <= limits_.max_free_order_properties) {
      // Objects are equal whatever the order of their keys.
      std::vector<int> members;
      for (const auto& [k, x] : v.items())
        members.push_back(g_.seq({lit(Json(k).dump(-1, ' ', false) + ": "), literal_value(x)}));
      return g_.seq({lit("{"),
                     free_order(members, std::vector<bool>(members.size(), false), -1, lit(", ")),
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

  int compile_enum(const Json& s) {
    for (const auto& [k, v] : s.items()) {
      if (k != "enum" && k != "const" && k != "type" && !is_annotation(k) &&
          !(k == "format" && !limits_.format_assertion)) {
        unsupported(k, "together with enum/const");
      }
    }
    Json vals = Json::array();
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) throw Error("enum must be an array");
      if (static_cast<int>(s["enum"].size()) > limits_.max_enum_values) {
        throw Error(fmt::format("enum has {} values, above the limit {}", s["enum"].size(),
                                limits_.max_enum_values));
      }
      vals = s["enum"];
    }
    if (s.contains("const")) {
      if (s.contains("enum")) {
        vals = std::find(vals.begin(), vals.end(), s["const"]) != vals.end()
                   ? Json::array({s["const"]})
                   : Json::array();
      } else {
        vals = Json::array({s["const"]});
      }
    }
    std::vector<std::string> types = types_of(s);
    std::vector<int> alts;
    std::set<std::string> seen;
    for (const auto& v : vals) {
      std::string t = v.is_null()      ? "null"
                      : v.is_boolean() ? "boolean"
                      : v.is_object()  ? "object"
                      : v.is_array()   ? "array"
                      : v.is_string()  ? "string"
                                       : "number";
      const bool integral = v.is_number_integer() ||
                            (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
      const bool ok = std::find(types.begin(), types.end(), t) != types.end() ||
                      (t == "number" && integral &&
                       std::find(types.begin(), types.end(), "integer") != types.end());
      if (!ok) continue;
      const std::string text = python_json_dumps(v);
      if (!seen.insert(text).second) continue;
      alts.push_back(literal_value(v));
    }
    return g_.alt(std::move(alts));
  }

  // ---- strings -----------------------------------------------------------------------------

  static std::optional<long> count_kw(const Json& s, const char* k) {
    if (!s.contains(k)) return std::nullopt;
    if (!s[k].is_number() || s[k].get<double>() < 0)
      throw Error(fmt::format("{} must be a non-negative number", k));
    return static_cast<long>(std::min(s[k].get<double>(), 1e9));
  }

  int compile_string(const Json& s) {
    const auto min_len = count_kw(s, "minLength");
    const auto max_len = count_kw(s, "maxLength");
    const bool has_pattern = s.contains("pattern");
    const bool has_format = s.contains("format") && limits_.format_assertion;
    if (has_pattern || has_format) {
      if (has_pattern && has_format) unsupported("format", "together with pattern");
      if ((min_len && *min_len > 0) || max_len)
        unsupported(min_len ? "minLength" : "maxLength", "together with pattern or format");
      if (has_pattern && !s["pattern"].is_string()) throw Error("pattern must be a string");
      const int body =
          has_pattern
              ? compile_regex(g_, s["pattern"].get<std::string>(), RegexEncoding::json_string, true)
              : compile_regex(g_, format_regex(s["format"]), RegexEncoding::json_string, false);
      return g_.seq({lit("\""), body, lit("\"")});
    }
    const long lo = min_len.value_or(0);
    const long hi = max_len ? *max_len : -1;
    if (hi >= 0 && hi < lo) return g_.alt({});
    if (lo > 10000 || hi > 10000)
      unsupported(lo > 10000 ? "minLength" : "maxLength", "counts above 10000");
    if (lo == 0 && hi < 0) return ref(string_);
    return g_.seq(
        {lit("\""), g_.repeat(ref(char_), static_cast<int>(lo), static_cast<int>(hi)), lit("\"")});
  }

  static std::string format_regex(const Json& f) {
    if (!f.is_string()) throw Error("format must be a string");
    const std::string name = f.get<std::string>();
    static const std::string date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
    static const std::string time =
        "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-"
        "5][0-9])";
    static const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    static const std::string atext = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+";
    if (name == "date") return date;
    if (name == "time") return time;
    if (name == "date-time") return date + "[Tt]" + time;
    if (name == "email")
      return atext + "(\\." + atext +
             ")*@[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)"
             "*";
    if (name == "uuid")
      return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    if (name == "ipv4") return octet + "(\\." + octet + "){3}";
    if (name == "uri")
      return "[a-zA-Z][a-zA-Z0-9+.-]*:[^\\x00-\\x20\"<>\\\\^`{|}\\x7f-\\x{10FFFF}]*";
    throw Error(fmt::format("unsupported JSON Schema keyword 'format' with value '{}'", name));
  }

  // ---- numbers -----------------------------------------------------------------------------

  // Canonical decimal naturals with exactly as many digits as a (== b's length), in [a, b].
  int same_length_range(const std::string& a, const std::string& b) {
    if (a.empty()) return g_.empty();
    if (a[0] == b[0])
      return g_.seq({lit(a.substr(0, 1)), same_length_range(a.substr(1), b.substr(1))});
    const std::size_t rest = a.size() - 1;
    const std::string nines(rest, '9'), zeros(rest, '0');
    if (a.substr(1) == zeros && b.substr(1) == nines) {
      return g_.seq(
          {g_.byte_range(static_cast<unsigned char>(a[0]), static_cast<unsigned char>(b[0])),
           g_.repeat(g_.byte_range('0', '9'), static_cast<int>(rest), static_cast<int>(rest))});
    }
    std::vector<int> alts{g_.seq({lit(a.substr(0, 1)), same_length_range(a.substr(1), nines)})};
    if (a[0] + 1 <= b[0] - 1) {
      alts.push_back(g_.seq(
          {g_.byte_range(static_cast<unsigned char>(a[0] + 1),
                         static_cast<unsigned char>(b[0] - 1)),
           g_.repeat(g_.byte_range('0', '9'), static_cast<int>(rest), static_cast<int>(rest))}));
    }
    alts.push_back(g_.seq({lit(b.substr(0, 1)), same_length_range(zeros, b.substr(1))}));
    return g_.alt(std::move(alts));
  }

  // Naturals in [a, b] (b empty: unbounded), written without leading zeros.
  int natural_range(std::uint64_t a, std::optional<std::uint64_t> b) {
    if (b && *b < a) return g_.alt({});
    const std::string as = std::to_string(a);
    const std::size_t max_len = b ? std::to_string(*b).size() : as.size();
    std::vector<int> alts;
    for (std::size_t len = as.size(); len <= max_len; ++len) {
      std::uint64_t lo = len == 1 ? 0 : 1;
      for (std::size_t i = 1; i < len; ++i) lo *= 10;
      std::uint64_t hi = lo == 0 ? 9 : lo * 10 - 1;
      lo = std::max(lo, a);
      if (b) hi = std::min(hi, *b);
      if (lo <= hi) alts.push_back(same_length_range(std::to_string(lo), std::to_string(hi)));
    }
    if (!b) {  // every number with more digits than a is larger
      alts.push_back(g_.seq({g_.byte_range('1', '9'),
                             g_.repeat(g_.byte_range('0', '9'), static_cast<int>(as.size()), -1)}));
    }
    return g_.alt(std::move(alts));
  }

  int compile_number(const Json& s, bool integer) {
    std::optional<double> lo, hi;
    bool lo_excl = false, hi_excl = false;
    auto num = [&](const char* k) -> std::optional<double> {
      if (!s.contains(k)) return std::nullopt;
      if (s[k].is_boolean()) unsupported(k, "the draft-04 boolean form");
      if (!s[k].is_number()) throw Error(fmt::format("{} must be a number", k));
      return s[k].get<double>();
    };
    if (auto v = num("minimum")) lo = v;
    if (auto v = num("exclusiveMinimum"); v && (!lo || *v >= *lo)) {
      lo = v;
      lo_excl = true;
    }
    if (auto v = num("maximum")) hi = v;
    if (auto v = num("exclusiveMaximum"); v && (!hi || *v <= *hi)) {
      hi = v;
      hi_excl = true;
    }
    std::optional<double> mult = num("multipleOf");
    if (mult && *mult <= 0) throw Error("multipleOf must be > 0");
    const bool bounded = lo || hi;
    if (!integer && mult)
      unsupported("multipleOf", "on a number that is not an integer (supported for type integer)");
    if (!integer && bounded) return bounded_number(lo, lo_excl, hi, hi_excl);
    if (!bounded && !mult) return ref(integer ? integer_ : number_);
    if (mult) {
      if (bounded) unsupported("multipleOf", "together with minimum/maximum");
      if (std::floor(*mult) != *mult || *mult > 10000)
        unsupported("multipleOf", "only integer divisors up to 10000");
      return multiple_of(static_cast<int>(*mult));
    }
    // Integer bounds: [ceil(lo), floor(hi)], exclusive bounds moved in by one.
    constexpr double kLimit = 9e18;
    std::optional<std::int64_t> a, b;
    if (lo) {
      if (*lo > kLimit) return g_.alt({});
      if (*lo >= -kLimit)
        a = static_cast<std::int64_t>(lo_excl ? std::floor(*lo) + 1 : std::ceil(*lo));
    }
    if (hi) {
      if (*hi < -kLimit) return g_.alt({});
      if (*hi <= kLimit)
        b = static_cast<std::int64_t>(hi_excl ? std::ceil(*hi) - 1 : std::floor(*hi));
    }
    std::vector<int> alts;
    if (!b || *b >= 0) {
      alts.push_back(natural_range(
          a ? static_cast<std::uint64_t>(std::max<std::int64_t>(*a, 0)) : 0,
          b ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*b)) : std::nullopt));
    }
    if (!a || *a < 0) {  // negative part: magnitudes in [max(1, -b), -a]
      const std::uint64_t m_lo = b && *b < 0 ? static_cast<std::uint64_t>(-*b) : 1;
      alts.push_back(g_.seq({lit("-"), natural_range(m_lo, a ? std::optional<std::uint64_t>(
                                                                   static_cast<std::uint64_t>(-*a))
                                                             : std::nullopt)}));
    }
    return g_.seq({g_.alt(std::move(alts)), zero_fraction()});
  }

  // A bound as decimal digits: integer part and fraction digits (no exponent), |v| < 1e15.
  struct Decimal {
    std::uint64_t whole = 0;
    std::string frac;  // without trailing zeros
  };
  static Decimal to_decimal(double v, const char* kw) {
    if (!(std::abs(v) < 1e15) || (v != 0 && std::abs(v) < 1e-12)) {
      unsupported(kw, "bounds of a non-integer number must lie within 1e-12 <= |bound| < 1e15");
    }
    std::string s = fmt::format("{:.15f}", std::abs(v));
    // Shortest digits that round-trip, so 0.1 is "0.1", not 0.1000000000000000055.
    for (int prec = 0; prec <= 15; ++prec) {
      const std::string t = fmt::format("{:.{}f}", std::abs(v), prec);
      if (std::strtod(t.c_str(), nullptr) == std::abs(v)) {
        s = t;
        break;
      }
    }
    Decimal d;
    const auto dot = s.find('.');
    d.whole = std::stoull(s.substr(0, dot));
    if (dot != std::string::npos) d.frac = s.substr(dot + 1);
    while (!d.frac.empty() && d.frac.back() == '0') d.frac.pop_back();
    return d;
  }

  // Fraction digits s (the x in "I.x"; empty when there is no fraction) whose value 0.s lies
  // above 0.lo (strictly if lo_strict) and below 0.hi (strictly if hi_strict); a missing bound
  // is std::nullopt. Digit by digit: a digit above lo's (below hi's) settles that side.
  int fraction_between(std::optional<std::string> lo, bool lo_strict, std::optional<std::string> hi,
                       bool hi_strict, bool allow_empty) {
    const int digit_any = g_.byte_range('0', '9');
    if (lo && lo->empty() && !lo_strict) lo.reset();  // >= 0: always true
    if (!lo && !hi) return g_.repeat(digit_any, allow_empty ? 0 : 1, -1);
    if (lo && lo->empty() && !hi) {  // > 0: some digit after here is not 0
      return g_.seq(
          {g_.repeat(lit("0"), 0, -1), g_.byte_range('1', '9'), g_.repeat(digit_any, 0, -1)});
    }
    if (hi && hi->empty()) {  // the rest must be 0 (<= 0) or is impossible (< 0)
      if (hi_strict || (lo && lo_strict)) return g_.alt({});
      return g_.repeat(lit("0"), allow_empty ? 0 : 1, -1);
    }
    std::vector<int> alts;
    // Ending here means the remaining digits are zeros.
    const bool end_ok = !lo || (lo->empty() && !lo_strict);
    if (allow_empty && end_ok) alts.push_back(g_.empty());
    for (int c = '0'; c <= '9'; ++c) {
      std::optional<std::string> nlo = lo, nhi = hi;
      bool dead = false;
      if (lo) {
        const char l = lo->empty() ? '0' : (*lo)[0];
        if (c > l)
          nlo.reset();
        else if (c < l)
          dead = true;
        else
          nlo = lo->empty() ? std::string() : lo->substr(1);
      }
      if (hi) {
        const char h = (*hi)[0];
        if (c < h)
          nhi.reset();
        else if (c > h)
          dead = true;
        else
          nhi = hi->substr(1);
      }
      if (dead) continue;
      alts.push_back(g_.seq({lit(std::string(1, static_cast<char>(c))),
                             fraction_between(nlo, lo_strict, nhi, hi_strict, true)}));
    }
    return g_.alt(std::move(alts));
  }

  // The fraction part of a number ("" or "." digits) under the same bounds.
  int fraction_part(const std::optional<std::string>& lo, bool lo_strict,
                    const std::optional<std::string>& hi, bool hi_strict) {
    std::vector<int> alts;
    // No fraction at all: the value of the fraction is 0.
    const bool zero_ok =
        (!lo || (lo->empty() && !lo_strict)) && (!hi || !hi->empty() || !hi_strict);
    if (zero_ok) alts.push_back(g_.empty());
    alts.push_back(g_.seq({lit("."), fraction_between(lo, lo_strict, hi, hi_strict, false)}));
    return g_.alt(std::move(alts));
  }

  // Non-negative decimals I.F (no exponent) between lo and hi (each optional, strict or not).
  int nonneg_between(const std::optional<Decimal>& lo, bool lo_strict,
                     const std::optional<Decimal>& hi, bool hi_strict) {
    auto whole = [&](std::uint64_t v) { return lit(std::to_string(v)); };
    const int any_frac =
        g_.repeat(g_.seq({lit("."), g_.repeat(g_.byte_range('0', '9'), 1, -1)}), 0, 1);
    const std::uint64_t li = lo ? lo->whole : 0;
    std::vector<int> alts;
    if (hi && hi->whole < li) return g_.alt({});
    if (hi && hi->whole == li) {
      alts.push_back(
          g_.seq({whole(li), fraction_part(lo ? std::optional<std::string>(lo->frac) : std::nullopt,
                                           lo_strict, hi->frac, hi_strict)}));
      return g_.alt(std::move(alts));
    }
    // I == li: the fraction decides the lower side.
    alts.push_back(
        g_.seq({whole(li), fraction_part(lo ? std::optional<std::string>(lo->frac) : std::nullopt,
                                         lo_strict, std::nullopt, false)}));
    // li < I < hi.whole: any fraction.
    if (!hi || hi->whole > li + 1) {
      alts.push_back(g_.seq(
          {natural_range(li + 1, hi ? std::optional<std::uint64_t>(hi->whole - 1) : std::nullopt),
           any_frac}));
    }
    // I == hi.whole: the fraction decides the upper side.
    if (hi)
      alts.push_back(
          g_.seq({whole(hi->whole), fraction_part(std::nullopt, false, hi->frac, hi_strict)}));
    return g_.alt(std::move(alts));
  }

  // Numbers (no exponent: a subset, never a superset) with decimal bounds: the non-negative
  // ones directly, the negative ones as "-" and a magnitude with the bounds mirrored.
  int bounded_number(std::optional<double> lo, bool lo_excl, std::optional<double> hi,
                     bool hi_excl) {
    if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_excl || hi_excl)))) return g_.alt({});
    std::vector<int> alts;
    // x >= 0 part: bounds max(lo, 0), hi.
    if (!hi || *hi > 0 || (*hi == 0 && !hi_excl)) {
      std::optional<Decimal> l, h;
      bool ls = false;
      if (lo && *lo >= 0) {
        l = to_decimal(*lo, lo_excl ? "exclusiveMinimum" : "minimum");
        ls = lo_excl;
      }
      if (hi) h = to_decimal(*hi, hi_excl ? "exclusiveMaximum" : "maximum");
      alts.push_back(nonneg_between(l, ls, h, hi_excl));
    }
    // x < 0 part: x = -m, m > 0; lo <= x  <=>  m <= -lo;  x <= hi  <=>  m >= -hi.
    if (!lo || *lo < 0) {
      std::optional<Decimal> l, h;
      bool ls = true;  // m > 0 (zero is in the non-negative part)
      if (hi && *hi < 0) {
        l = to_decimal(-*hi, hi_excl ? "exclusiveMaximum" : "maximum");
        ls = hi_excl;
      } else {
        l = Decimal{};
      }
      if (lo) h = to_decimal(-*lo, lo_excl ? "exclusiveMinimum" : "minimum");
      alts.push_back(g_.seq({lit("-"), nonneg_between(l, ls, h, lo_excl)}));
    }
    return g_.alt(std::move(alts));
  }

  // Integers divisible by m: a remainder automaton over the decimal digits.
  int multiple_of(int m) {
    std::vector<int> rem(static_cast<std::size_t>(m));
    const std::string base = fmt::format("mult{}_{}", m, g_.rules.size());
    for (int r = 0; r < m; ++r)
      rem[static_cast<std::size_t>(r)] = g_.add_rule(fmt::format("{}_r{}", base, r));
    for (int r = 0; r < m; ++r) {
      std::vector<int> alts;
      if (r == 0) alts.push_back(g_.empty());
      for (int d = 0; d <= 9; ++d) {
        alts.push_back(g_.seq({lit(std::string(1, static_cast<char>('0' + d))),
                               ref(rem[static_cast<std::size_t>((r * 10 + d) % m)])}));
      }
      g_.define(rem[static_cast<std::size_t>(r)], g_.alt(std::move(alts)));
    }
    std::vector<int> first{lit("0")};
    for (int d = 1; d <= 9; ++d)
      first.push_back(g_.seq({lit(std::string(1, static_cast<char>('0' + d))),
                              ref(rem[static_cast<std::size_t>(d % m)])}));
    return g_.seq({g_.repeat(lit("-"), 0, 1), g_.alt(std::move(first)), zero_fraction()});
  }

  // ---- objects -----------------------------------------------------------------------------

  int compile_object(const Json& s, int depth) {
    static const Json kEmpty = Json::object();
    const Json& schema_props = s.contains("properties") ? s["properties"] : kEmpty;
    if (!schema_props.is_object()) throw Error("properties must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) throw Error("required must be an array");
      for (const auto& r : s["required"]) required.insert(r.get<std::string>());
    }
    const Json* additional =
        s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    const bool closed = additional && additional->is_boolean() && !additional->get<bool>();
    // dependentRequired (draft-07: dependencies with array values): a present key requires others.
    std::map<std::string, std::vector<std::string>> depends;
    for (const char* kw : {"dependentRequired", "dependencies"}) {
      if (!s.contains(kw)) continue;
      if (!s[kw].is_object()) throw Error(fmt::format("{} must be an object", kw));
      for (const auto& [k, v] : s[kw].items()) {
        if (!v.is_array()) unsupported(kw, "schema dependencies (dependentSchemas)");
        for (const auto& x : v) {
          if (!x.is_string()) throw Error(fmt::format("{} lists must hold strings", kw));
          depends[k].push_back(x.get<std::string>());
        }
      }
    }
    // Names that are required, or take part in a dependency, but are not in properties are
    // tracked like listed properties whose schema is additionalProperties (or true): then the
    // grammar can force or count them.
    const Json* props_ptr = &schema_props;
    {
      Json listed = schema_props;
      auto add = [&](const std::string& name) {
        if (!listed.contains(name)) listed[name] = additional ? *additional : Json(true);
      };
      for (const auto& r : required) add(r);
      for (const auto& [k, v] : depends) {
        add(k);
        for (const auto& x : v) add(x);
      }
      if (listed.size() != schema_props.size()) {
        if (s.contains("propertyNames") && s["propertyNames"] != Json(true)) {
          unsupported("propertyNames",
                      "together with required or dependentRequired names not in properties");
        }
        owned_.push_back(std::move(listed));  // stable address: rule_for() keys subschemas by it
        props_ptr = &owned_.back();
      }
    }
    const Json& props = *props_ptr;
    const auto min_props = count_kw(s, "minProperties");
    const auto max_props = count_kw(s, "maxProperties");
    if (props.empty()) return free_object(s, additional, min_props, max_props, depth);
    if (min_props && *min_props > static_cast<long>(required.size())) {
      unsupported("minProperties", "more than the required properties");
    }
    if (max_props && (!closed || *max_props < static_cast<long>(props.size()))) {
      if (*max_props < static_cast<long>(required.size())) return g_.alt({});
      unsupported("maxProperties", "fewer than the properties an instance may have");
    }
    // members[i]: the i-th property's "key": value.
    std::vector<int> members;
    std::vector<bool> optional;
    std::vector<std::string> names;
    for (const auto& [name, sub] : props.items()) {
      names.push_back(name);
      const std::string key = Json(name).dump(-1, ' ', false);
      members.push_back(member(lit(key), ref(rule_for(sub, depth))));
      optional.push_back(!required.count(name));
    }
    // needs[i]: the members that member i's presence requires (bit j = names[j]).
    std::vector<std::uint32_t> needs(names.size(), 0);
    for (const auto& [k, v] : depends) {
      const auto i =
          static_cast<std::size_t>(std::find(names.begin(), names.end(), k) - names.begin());
      for (const auto& x : v) {
        const auto j =
            static_cast<std::size_t>(std::find(names.begin(), names.end(), x) - names.begin());
        if (j < 32) needs[i] |= std::uint32_t{1} << j;
      }
    }
    if (!depends.empty() && static_cast<int>(names.size()) > limits_.max_free_order_properties) {
      unsupported(s.contains("dependentRequired") ? "dependentRequired" : "dependencies",
                  fmt::format("on an object with more than {} listed or required properties",
                              limits_.max_free_order_properties));
    }
    int extra = -1;  // one additional member, or -1 when none is allowed
    if (!closed) {
      const int value = additional ? ref(rule_for(*additional, depth)) : ref(value_);
      extra = member(other_key(names), value);
    }
    const std::size_t n = members.size();
    if (static_cast<int>(n) <= limits_.max_free_order_properties) {
      return g_.seq({lit("{"), ref(ws_), free_order(members, optional, extra, comma(), needs),
                     ref(ws_), lit("}")});
    }
    // Too many properties to track which were written: the schema's order.
    // first[i]: members i.. when none has been written yet; after[i]: when one has.
    std::vector<int> first(n + 1), after(n + 1);
    const int extras_after = extra >= 0 ? g_.repeat(g_.seq({comma(), extra}), 0, -1) : g_.empty();
    after[n] = extras_after;
    first[n] = extra >= 0 ? g_.repeat(g_.seq({extra, extras_after}), 0, 1) : g_.empty();
    for (std::size_t i = n; i-- > 0;) {
      const int with = g_.seq({comma(), members[i], after[i + 1]});
      after[i] = optional[i] ? g_.alt({with, after[i + 1]}) : with;
      const int with_first = g_.seq({members[i], after[i + 1]});
      first[i] = optional[i] ? g_.alt({with_first, first[i + 1]}) : with_first;
    }
    return g_.seq({lit("{"), ref(ws_), first[0], ref(ws_), lit("}")});
  }

  // The members of an object in any order: each listed one at most once (and the required
  // ones at least once), additional ones (`extra`, or -1 for none) anywhere between them, `sep`
  // between two members. A rule per set of listed members written so far (2^n rules, hence
  // JsonSchemaLimits::max_free_order_properties): JSON Schema does not order properties.
  int free_order(const std::vector<int>& members, const std::vector<bool>& optional, int extra,
                 int sep, const std::vector<std::uint32_t>& needs = {}) {
    const std::size_t n = members.size();
    // The object may end after `seen` when the required members and those the written ones
    // depend on (dependentRequired) are all in it.
    auto complete = [&](std::size_t seen, std::uint32_t required) {
      if ((seen & required) != required) return false;
      for (std::size_t i = 0; i < needs.size(); ++i) {
        if ((seen >> i & 1) && (seen & needs[i]) != needs[i]) return false;
      }
      return true;
    };
    std::uint32_t required = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!optional[i]) required |= std::uint32_t{1} << i;
    }
    // after[seen]: what may follow once at least one member was written, `seen` the listed ones.
    std::vector<int> after(std::size_t{1} << n);
    const std::string base = fmt::format("members{}_", g_.rules.size());
    for (std::size_t seen = 0; seen < after.size(); ++seen)
      after[seen] = g_.add_rule(base + std::to_string(seen));
    for (std::size_t seen = 0; seen < after.size(); ++seen) {
      std::vector<int> alts;
      if (complete(seen, required)) alts.push_back(g_.empty());
      for (std::size_t i = 0; i < n; ++i) {
        if (!(seen >> i & 1))
          alts.push_back(g_.seq({sep, members[i], ref(after[seen | std::size_t{1} << i])}));
      }
      if (extra >= 0) alts.push_back(g_.seq({sep, extra, ref(after[seen])}));
      g_.define(after[seen], g_.alt(std::move(alts)));
    }
    std::vector<int> first;
    if (complete(0, required)) first.push_back(g_.empty());
    for (std::size_t i = 0; i < n; ++i)
      first.push_back(g_.seq({members[i], ref(after[std::size_t{1} << i])}));
    if (extra >= 0) first.push_back(g_.seq({extra, ref(after[0])}));
    return g_.alt(std::move(first));
  }

  // An object without listed properties: every member is "additional", its key constrained by
  // propertyNames (as a string schema) and its value by additionalProperties; the member count
  // by minProperties / maxProperties.
  int free_object(const Json& s, const Json* additional, std::optional<long> min_props,
                  std::optional<long> max_props, int depth) {
    const long lo = min_props.value_or(0);
    long hi = max_props ? *max_props : -1;
    if (additional && additional->is_boolean() && !additional->get<bool>()) hi = 0;
    if (s.contains("propertyNames") && s["propertyNames"].is_boolean() &&
        !s["propertyNames"].get<bool>())
      hi = 0;
    if (hi >= 0 && hi < lo) return g_.alt({});
    if (lo > 10000 || hi > 10000)
      unsupported(lo > 10000 ? "minProperties" : "maxProperties", "counts above 10000");
    const int empty_object = g_.seq({lit("{"), ref(ws_), lit("}")});
    if (hi == 0) return empty_object;
    int key = ref(string_);
    if (s.contains("propertyNames") && !s["propertyNames"].is_boolean()) {
      owned_.push_back(merge(flatten(s["propertyNames"], depth + 1), Json{{"type", "string"}}));
      key = compile_schema(owned_.back(), depth + 1);
    }
    const int value = additional ? ref(rule_for(*additional, depth)) : ref(value_);
    const int m = member(key, value);
    const int rest = g_.repeat(g_.seq({comma(), m}), static_cast<int>(std::max(0L, lo - 1)),
                               static_cast<int>(hi < 0 ? -1 : hi - 1));
    const int members = g_.seq({lit("{"), ref(ws_), m, rest, ref(ws_), lit("}")});
    return lo == 0 ? g_.alt({empty_object, members}) : members;
  }

  // A key (with its quotes) that is none of `names`, spelled canonically so that no escape can
  // disguise a listed name: a trie of the names, leaving it at the first differing character.
  int other_key(const std::vector<std::string>& names) {
    struct Node {
      std::map<std::uint32_t, int> next;
      bool end = false;
    };
    std::vector<Node> trie(1);
    for (const auto& name : names) {
      int t = 0;
      for (std::size_t i = 0; i < name.size();) {
        const auto b0 = static_cast<unsigned char>(name[i]);
        const int len = b0 < 0x80 ? 1 : b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
        std::uint32_t cp = len == 1 ? b0 : b0 & (0xFF >> (len + 1));
        for (int k = 1; k < len && i + static_cast<std::size_t>(k) < name.size(); ++k)
          cp = (cp << 6) |
               (static_cast<unsigned char>(name[i + static_cast<std::size_t>(k)]) & 0x3F);
        i += static_cast<std::size_t>(len);
        auto it = trie[static_cast<std::size_t>(t)].next.find(cp);
        if (it == trie[static_cast<std::size_t>(t)].next.end()) {
          trie.emplace_back();
          it = trie[static_cast<std::size_t>(t)]
                   .next.emplace(cp, static_cast<int>(trie.size()) - 1)
                   .first;
        }
        t = it->second;
      }
      trie[static_cast<std::size_t>(t)].end = true;
    }
    // One rule for the free tail, called last (a tail call, see parser.cpp): wherever the key
    // leaves the names' trie, it continues in the same states.
    const int any_char = json_string_chars(g_, {{0, 0x10FFFF}}, true);
    const int tail_rule = g_.add_rule(fmt::format("key{}_tail", g_.rules.size()));
    g_.define(tail_rule, g_.seq({g_.repeat(any_char, 0, -1), lit("\"")}));
    const int free_tail = ref(tail_rule);
    std::vector<int> rule(trie.size());
    for (std::size_t t = 0; t < trie.size(); ++t)
      rule[t] = g_.add_rule(fmt::format("key{}_{}", g_.rules.size(), t));
    for (std::size_t t = 0; t < trie.size(); ++t) {
      std::vector<int> alts;
      if (!trie[t].end) alts.push_back(lit("\""));
      CodePointRanges others;
      std::uint32_t next = 0;
      for (const auto& [cp, child] : trie[t].next) {
        alts.push_back(g_.seq(
            {json_string_chars(g_, {{cp, cp}}, true), ref(rule[static_cast<std::size_t>(child)])}));
        if (cp > next) others.emplace_back(next, cp - 1);
        next = cp + 1;
      }
      if (next <= 0x10FFFF) others.emplace_back(next, 0x10FFFF);
      alts.push_back(g_.seq({json_string_chars(g_, others, true), free_tail}));
      g_.define(rule[t], g_.alt(std::move(alts)));
    }
    return g_.seq({lit("\""), ref(rule[0])});
  }

  // ---- arrays ------------------------------------------------------------------------------

  // The values a schema allows when they are a few scalars (a boolean or null type, an enum or
  // const of scalars), else std::nullopt.
  std::optional<std::vector<Json>> few_values(const Json& sub, int depth) {
    const Json f = flatten(sub, depth + 1);
    if (f.is_boolean())
      return f.get<bool>() ? std::nullopt : std::optional<std::vector<Json>>(std::vector<Json>{});
    for (const auto& [k, v] : f.items()) {
      if (k != "enum" && k != "const" && k != "type" && !is_annotation(k)) return std::nullopt;
    }
    std::vector<Json> vals;
    if (f.contains("enum") || f.contains("const")) {
      const Json list = f.contains("const") ? Json::array({f["const"]}) : f["enum"];
      for (const auto& v : list) {
        if (v.is_object() || v.is_array()) return std::nullopt;
        if (f.contains("enum") && f.contains("const") && canonical(v) != canonical(f["const"]))
          continue;
        vals.push_back(v);
      }
    } else {
      for (const auto& t : types_of(f)) {
        if (t == "boolean")
          vals.insert(vals.end(), {Json(true), Json(false)});
        else if (t == "null")
          vals.emplace_back(nullptr);
        else
          return std::nullopt;
      }
    }
    // Keep the values of the schema's types (an enum may list others).
    std::vector<Json> kept;
    for (const auto& v : vals) {
      Json one = f;
      one.erase("enum");
      one["const"] = v;
      if (f.contains("type") && !compile_enum_allows(one)) continue;
      kept.push_back(v);
    }
    return kept;
  }
  bool compile_enum_allows(const Json& s) {
    const std::vector<std::string> types = types_of(s);
    const Json& v = s["const"];
    const std::string t = v.is_null()      ? "null"
                          : v.is_boolean() ? "boolean"
                          : v.is_string()  ? "string"
                                           : "number";
    const bool integral = v.is_number_integer() ||
                          (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    return std::find(types.begin(), types.end(), t) != types.end() ||
           (t == "number" && integral &&
            std::find(types.begin(), types.end(), "integer") != types.end());
  }

  // uniqueItems where every item comes from a few scalars: every array of pairwise different
  // values, listed (at most 256 of them), else -1.
  int unique_arrays(const std::vector<const Json*>& prefix, const Json* rest, bool rest_allowed,
                    long min_items, long max_items, int depth) {
    std::vector<std::vector<Json>> at;  // the values allowed at each position
    for (const Json* x : prefix) {
      auto v = few_values(*x, depth);
      if (!v) return -1;
      at.push_back(std::move(*v));
    }
    std::vector<Json> rest_vals;
    if (rest_allowed) {
      if (!rest) return -1;
      auto v = few_values(*rest, depth);
      if (!v) return -1;
      rest_vals = std::move(*v);
    }
    // Unique items from the prefix's values and the rest's: never longer than that.
    long longest = static_cast<long>(at.size() + rest_vals.size());
    if (max_items >= 0) longest = std::min(longest, max_items);
    std::vector<int> arrays;
    std::vector<Json> picked;
    std::vector<nlohmann::json> seen;
    bool too_many = false;
    std::function<void()> extend = [&]() {
      if (too_many) return;
      const long n = static_cast<long>(picked.size());
      if (n >= min_items) {
        std::vector<int> items{lit("["), ref(ws_)};
        for (long i = 0; i < n; ++i) {
          if (i) items.push_back(comma());
          items.push_back(literal_value(picked[static_cast<std::size_t>(i)]));
        }
        items.push_back(ref(ws_));
        items.push_back(lit("]"));
        arrays.push_back(g_.seq(std::move(items)));
        if (arrays.size() > 256) too_many = true;
      }
      if (n >= longest) return;
      const std::vector<Json>& options =
          n < static_cast<long>(at.size()) ? at[static_cast<std::size_t>(n)] : rest_vals;
      for (const Json& v : options) {
        const nlohmann::json c = canonical(v);
        if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
        picked.push_back(v);
        seen.push_back(c);
        extend();
        picked.pop_back();
        seen.pop_back();
      }
    };
    extend();
    if (too_many) return -1;
    return g_.alt(std::move(arrays));
  }

  int compile_array(const Json& s, int depth) {
    std::vector<const Json*> prefix;
    const Json* rest = nullptr;  // schema of the items after the prefix; nullptr = any
    bool rest_allowed = true;
    auto set_rest = [&](const Json& r) {
      if (r.is_boolean() && !r.get<bool>())
        rest_allowed = false;
      else
        rest = &r;
    };
    if (s.contains("prefixItems")) {
      for (const auto& x : s["prefixItems"]) prefix.push_back(&x);
      if (s.contains("items")) set_rest(s["items"]);
    } else if (s.contains("items") && s["items"].is_array()) {  // draft-07 tuple form
      for (const auto& x : s["items"]) prefix.push_back(&x);
      if (s.contains("additionalItems")) set_rest(s["additionalItems"]);
    } else if (s.contains("items")) {
      set_rest(s["items"]);
    }
    const long min_items = count_kw(s, "minItems").value_or(0);
    const auto max_opt = count_kw(s, "maxItems");
    long max_items = max_opt ? *max_opt : -1;
    const long p = static_cast<long>(prefix.size());
    if (!rest_allowed) max_items = max_items < 0 ? p : std::min(max_items, p);
    if (max_items >= 0 && max_items < min_items) return g_.alt({});
    if (min_items > 10000 || max_items > 10000)
      unsupported(min_items > 10000 ? "minItems" : "maxItems", "counts above 10000");
    // uniqueItems: true compares every pair of items, which no context-free grammar can do in
    // general; it is a no-op only where an array holds at most one item.
    if (s.contains("uniqueItems") &&
        !(s["uniqueItems"].is_boolean() && !s["uniqueItems"].get<bool>()) &&
        !(max_items >= 0 && max_items <= 1)) {
      if (s.contains("contains")) unsupported("uniqueItems", "together with contains");
      const int listed = unique_arrays(prefix, rest, rest_allowed, min_items, max_items, depth);
      if (listed < 0) {
        unsupported(
            "uniqueItems",
            "on arrays that may hold two or more items that are not all from a few constants "
            "(comparing items is not context-free)");
      }
      return listed;
    }
    auto item = [&](long i) {
      if (i < p) return ref(rule_for(*prefix[static_cast<std::size_t>(i)], depth));
      return rest ? ref(rule_for(*rest, depth)) : ref(value_);
    };
    // contains: at least minContains (default 1) items match it; minContains 0 asserts nothing.
    // maxContains counts the items that do not match, which needs the complement of a schema.
    if (s.contains("contains")) {
      if (s.contains("maxContains"))
        unsupported("maxContains",
                    "counting the items that do not match 'contains' needs its complement");
      const long min_contains = count_kw(s, "minContains").value_or(1);
      if (min_contains > 0) {
        if (p > 0) unsupported("contains", "together with prefixItems (or draft-07 tuple items)");
        if (max_items >= 0 && rest_allowed) unsupported("contains", "together with maxItems");
        if (min_items > min_contains)
          unsupported("contains", "together with a minItems above minContains");
        if (min_contains > 100) unsupported("minContains", "counts above 100");
        if (!rest_allowed) return g_.alt({});
        // A match is an item that satisfies both the items schema and contains.
        int match;
        if (rest) {
          owned_.push_back(merge(flatten(*rest, depth + 1), flatten(s["contains"], depth + 1)));
          match = compile_schema(owned_.back(), depth + 1);
        } else {
          match = ref(rule_for(s["contains"], depth));
        }
        // Items before, between and after the matches are any items (they may match too).
        const int skip = g_.repeat(g_.seq({item(0), comma()}), 0, -1);
        std::vector<int> parts{skip, match};
        for (long k = 1; k < min_contains; ++k) parts.push_back(g_.seq({comma(), skip, match}));
        parts.push_back(g_.repeat(g_.seq({comma(), item(0)}), 0, -1));
        return g_.seq({lit("["), ref(ws_), g_.seq(std::move(parts)), ref(ws_), lit("]")});
      }
    }
    // tail(i): the items from index i on, after i items have been written.
    const long n_fixed = max_items >= 0 ? std::min(p, max_items) : p;
    int tail;
    {
      // Items beyond the prefix repeat one schema: count how many more are allowed.
      const long rep_lo = std::max(0L, min_items - n_fixed);
      const long rep_hi = max_items < 0 ? -1 : max_items - n_fixed;
      tail = (max_items >= 0 && n_fixed >= max_items) || (!rest_allowed && max_items < 0)
                 ? g_.empty()
                 : g_.repeat(g_.seq({comma(), item(n_fixed)}), static_cast<int>(rep_lo),
                             static_cast<int>(rep_hi));
    }
    for (long i = n_fixed; i-- > 1;) {
      const int with = g_.seq({comma(), item(i), tail});
      tail = i >= min_items ? g_.alt({g_.empty(), with}) : with;
    }
    int body;
    if (n_fixed >= 1) {
      body = g_.seq({item(0), tail});
    } else {
      // No prefix: the first item is the repeated schema too.
      const long rep_lo = std::max(0L, min_items - 1);
      const long rep_hi = max_items < 0 ? -1 : max_items - 1;
      body = max_items == 0
                 ? g_.alt({})
                 : g_.seq({item(0), g_.repeat(g_.seq({comma(), item(0)}), static_cast<int>(rep_lo),
                                              static_cast<int>(rep_hi))});
    }
    if (min_items == 0) body = g_.alt({g_.empty(), body});
    return g_.seq({lit("["), ref(ws_), body, ref(ws_), lit("]")});
  }
};

}  // namespace

Grammar json_schema_grammar(const Json& schema, const JsonSchemaLimits& limits) {
  return SchemaCompiler(schema, limits).compile();
}

Grammar json_mode_grammar(const JsonSchemaLimits& limits) {
  static const Json kTrue = true;
  return SchemaCompiler(kTrue, limits).json_mode();
}

}  // namespace inferlab
