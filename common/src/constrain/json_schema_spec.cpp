// JSON Schema, phase 1: the schema parsed into typed specs. Keywords are checked and
// normalised here: $ref and allOf merged into one schema, anyOf distributing its siblings over
// its branches, if/then/else, dependentSchemas and unevaluated* rewritten, `not` of a type
// subtracted (the rewrites on the schema's JSON are in json_schema_keywords.cpp). Subschemas
// are visited in the order the emitter first needs them, so that the first problem in that
// order is the one reported.
#include "inferlab/constrain/json_schema_spec.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "inferlab/base/json_input.hpp"
#include "inferlab/constrain/parser.hpp"
#include "inferlab/constrain/regex.hpp"
#include "json_schema_parser.hpp"

namespace inferlab::schema_parser {

namespace {

// The JSON type name of a value ("number" for integers too).
std::string type_of_value(const Json& v) {
  return v.is_null()      ? "null"
         : v.is_boolean() ? "boolean"
         : v.is_object()  ? "object"
         : v.is_array()   ? "array"
         : v.is_string()  ? "string"
                          : "number";
}

}  // namespace

bool value_has_type(const Json& v, const std::vector<std::string>& types) {
  const bool integral = v.is_number_integer() ||
                        (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  const std::string t = type_of_value(v);
  return contains_type(types, t) || (t == "number" && integral && contains_type(types, "integer"));
}

nlohmann::json canonical(const Json& v) {
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

std::optional<long> count_kw(const Json& s, const char* k) {
  if (!s.contains(k)) return std::nullopt;
  if (!s[k].is_number() || s[k].get<double>() < 0 ||
      std::floor(s[k].get<double>()) != s[k].get<double>())
    throw Error(fmt::format("{} must be a non-negative integer, got {}", k, s[k].dump()));
  return static_cast<long>(std::min(s[k].get<double>(), 1e9));
}

bool count_range_nonempty(long lo, long hi, const char* min_kw, const char* max_kw) {
  if (hi >= 0 && hi < lo) return false;
  constexpr long kMaxCount = 1000000;
  if (lo > kMaxCount || hi > kMaxCount)
    unsupported(lo > kMaxCount ? min_kw : max_kw, "counts above 1000000");
  return true;
}

const Json& SchemaParser::resolve(const std::string& r) {
  if (r.empty() || r[0] != '#') {
    throw Error(
        fmt::format("unsupported $ref '{}': only local references (#, #/...) are supported", r));
  }
  std::string ptr;
  for (std::size_t i = 1; i < r.size(); ++i) {  // percent-decoding (URI fragment)
    if (r[i] == '%' && i + 2 < r.size() && std::isxdigit(static_cast<unsigned char>(r[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(r[i + 2]))) {
      ptr += static_cast<char>(std::stoi(r.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      ptr += r[i];
    }
  }
  if (ptr.empty()) return root_;
  if (ptr[0] != '/') {
    const Json* anchored = find_anchor(root_, ptr, 0);
    if (!anchored)
      throw Error(
          fmt::format("$ref '{}': no $anchor (or draft-07 \"$id\": \"#{}\") named so", r, ptr));
    return *anchored;
  }
  try {
    const Json::json_pointer p(ptr);
    return root_.at(p);
  } catch (const std::exception&) {
    throw Error(fmt::format("$ref '{}' does not resolve to anything in the schema", r));
  }
}

const Json* SchemaParser::find_anchor(const Json& s, const std::string& name, int depth) {
  if (depth > kMaxJsonInputDepth) return nullptr;  // parse_json_input's limit
  if (s.is_object()) {
    if (s.contains("$anchor") && s["$anchor"] == name) return &s;
    if (s.contains("$id") && s["$id"] == "#" + name) return &s;
  }
  if (s.is_object() || s.is_array()) {
    for (const auto& x : s) {
      if (const Json* found = find_anchor(x, name, depth + 1)) return found;
    }
  }
  return nullptr;
}

Json SchemaParser::flatten(const Json& s, int depth) {
  if (depth > limits_.max_depth) {
    throw Error(fmt::format("schema nested (or $ref expanded inside allOf) deeper than {} levels",
                            limits_.max_depth));
  }
  count_visit();
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
    out = merge(flatten_target(resolve(s["$ref"].get<std::string>()), depth + 1), out);
  }
  if (s.contains("allOf")) {
    if (!s["allOf"].is_array() || s["allOf"].empty())
      throw Error("allOf must be a non-empty array");
    for (const Json& sub : s["allOf"]) out = merge(out, flatten(sub, depth + 1));
  }
  return out;
}

const Json& SchemaParser::flatten_target(const Json& target, int depth) {
  if (const auto it = flat_of_.find(&target); it != flat_of_.end()) return it->second;
  Json flat = flatten(target, depth);
  return flat_of_.emplace(&target, std::move(flat)).first->second;
}

SpecId SchemaParser::shared(const Json& s, int depth) {
  auto it = shared_of_.find(&s);
  if (it == shared_of_.end()) {
    const int target = static_cast<int>(out_.shared.size());
    it = shared_of_.emplace(&s, target).first;
    out_.shared.push_back(-1);  // set below; a recursive schema reaches it meanwhile
    const SpecId body = parse(s, depth + 1);
    out_.shared[static_cast<std::size_t>(target)] = body;
  }
  return add(RefSpec{it->second});
}

SpecId SchemaParser::parse(const Json& s, int depth) {
  if (depth > limits_.max_depth)
    throw Error(fmt::format("schema nested deeper than {} levels", limits_.max_depth));
  count_visit();
  if (s.is_boolean()) return s.get<bool>() ? add(AnySpec{}) : add(NothingSpec{});
  if (!s.is_object()) throw Error("a schema must be an object or a boolean");
  if ((s.contains("unevaluatedProperties") || s.contains("unevaluatedItems")) &&
      !has_applicator(s)) {
    return parse(own(without_unevaluated(s)), depth + 1);
  }
  if (s.contains("if") && (s.contains("then") || s.contains("else")))
    return parse(own(expand_if(s)), depth + 1);
  if (has_schema_dependencies(s)) return parse(own(expand_dependencies(s)), depth + 1);
  for (const auto& [k, v] : s.items()) check_keyword(s, k);
  // A bare $ref keeps its own rule: recursive schemas stay finite.
  if (s.contains("$ref") && only_annotations(s, {"$ref"})) {
    if (!s["$ref"].is_string()) throw Error("$ref must be a string");
    return shared(resolve(s["$ref"].get<std::string>()), depth);
  }
  if (s.contains("$ref") || s.contains("allOf")) return parse(own(flatten(s, depth)), depth + 1);
  if (s.contains("anyOf") || s.contains("oneOf")) return parse_any_of(s, depth);
  if (s.contains("enum") || s.contains("const")) return parse_enum(s, depth);

  std::vector<std::string> types = types_of(s);
  if (s.contains("not")) types = subtract_not(s["not"], types);
  std::vector<SpecId> options;
  const bool has_number = contains_type(types, "number");
  for (const auto& t : types) {
    if (t == "null")
      options.push_back(add(NullSpec{}));
    else if (t == "boolean")
      options.push_back(add(BooleanSpec{}));
    else if (t == "string")
      options.push_back(parse_string(s));
    else if (t == "number")
      options.push_back(parse_number(s, false));
    else if (t == "integer" && !has_number)  // number's language holds the integers
      options.push_back(parse_number(s, true));
    else if (t == "object")
      options.push_back(parse_object(s, depth));
    else if (t == "array")
      options.push_back(parse_array(s, depth));
  }
  return any_of(std::move(options));
}

SpecId SchemaParser::parse_any_of(const Json& s, int depth) {
  const bool one = s.contains("oneOf");
  const char* kw = one ? "oneOf" : "anyOf";
  const Json& branches = s[kw];
  if (!branches.is_array() || branches.empty())
    throw Error(fmt::format("{} must be a non-empty array", kw));
  // The other keywords apply to every branch (an anyOf beside a oneOf too).
  Json rest = s;
  rest.erase(kw);
  const bool plain = only_annotations(rest);
  std::vector<Json> merged;
  for (const Json& b : branches) {
    if (plain) {
      merged.push_back(b);
    } else {
      const Json branch = flatten(b, depth + 1);
      merged.push_back(merge(flatten(rest, depth + 1), branch));
    }
  }
  if (one && !limits_.one_of_as_any_of) check_disjoint(merged, depth);
  std::vector<SpecId> options;
  for (std::size_t i = 0; i < merged.size(); ++i) {
    options.push_back(plain ? shared(branches[i], depth) : parse(own(merged[i]), depth + 1));
  }
  return any_of(std::move(options));
}

void SchemaParser::check_disjoint(const std::vector<Json>& b, int depth) {
  auto type_set = [&](const Json& x) {
    Json f = flatten(x, depth + 1);
    std::set<std::string> t;
    if (f.is_boolean()) {
      if (f.get<bool>()) t.insert(all_types().begin(), all_types().end());
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

bool SchemaParser::excluded_by_not(const Json& negated, const Json& v, int depth) {
  const Json f = flatten(negated, depth + 1);
  if (f.is_boolean()) return f.get<bool>();
  for (const auto& [k, x] : f.items()) {
    if (k != "enum" && k != "const" && k != "type" && !is_annotation(k))
      unsupported("not", "beside enum/const, only 'not' of an enum, a const or a type");
  }
  if (f.contains("type") && !value_has_type(v, types_of(f))) return false;
  const nlohmann::json c = canonical(v);
  if (f.contains("const") && canonical(f["const"]) != c) return false;
  if (f.contains("enum")) {
    if (!f["enum"].is_array()) throw Error("enum must be an array");
    return std::any_of(f["enum"].begin(), f["enum"].end(),
                       [&](const Json& x) { return canonical(x) == c; });
  }
  return true;
}

std::vector<Json> SchemaParser::filter_values(std::vector<Json> values, const Json& siblings,
                                              int depth) {
  Json rest = siblings;
  if (rest.contains("not")) {
    const Json negated = rest["not"];
    rest.erase("not");
    std::erase_if(values, [&](const Json& v) { return excluded_by_not(negated, v, depth); });
  }
  if (rest.empty() || values.empty()) return values;
  SchemaParser sub(root_, limits_);
  sub.out_.root = sub.parse(rest, depth + 1);
  PushdownParser check(emit_json_schema(sub.out_, limits_));
  std::erase_if(values, [&](const Json& v) {
    return !check.matches(python_json_dumps(v));
  });
  return values;
}

SpecId SchemaParser::parse_enum(const Json& s, int depth) {
  Json siblings = Json::object();  // the keywords beside enum/const that constrain values
  for (const auto& [k, v] : s.items()) {
    if (k != "enum" && k != "const" && k != "type" && !is_annotation(k) &&
        !(k == "format" && !limits_.format_assertion)) {
      siblings[k] = v;
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
  const std::vector<std::string> types = types_of(s);
  std::vector<Json> kept;
  std::set<std::string> seen;
  for (const auto& v : vals) {
    if (!value_has_type(v, types)) continue;
    if (!seen.insert(python_json_dumps(v)).second) continue;
    kept.push_back(v);
  }
  EnumSpec spec;
  spec.values =
      siblings.empty() ? std::move(kept) : filter_values(std::move(kept), siblings, depth);
  return add(std::move(spec));
}

}  // namespace inferlab::schema_parser

namespace inferlab {

using schema_parser::Json;

void check_json_schema_limits(const JsonSchemaLimits& limits) {
  if (limits.max_free_order_properties < 0 ||
      limits.max_free_order_properties > MemberSet::kMaxMembers) {
    throw ParameterError("max_free_order_properties",
                         fmt::format("must be in [0, {}] (the bits of a member set's mask), got {}",
                                     MemberSet::kMaxMembers, limits.max_free_order_properties));
  }
}

JsonSchemaSpecs parse_json_schema(const Json& schema, const JsonSchemaLimits& limits) {
  check_json_schema_limits(limits);
  try {
    return schema_parser::SchemaParser(schema, limits).parse_root();
  } catch (const Json::exception& e) {
    // A keyword whose value has another JSON type than the one read (the checks above name the
    // common ones): one line, never nlohmann's exception escaping the compiler.
    throw Error(fmt::format("a keyword's value has the wrong JSON type ({})", e.what()));
  }
}

}  // namespace inferlab
