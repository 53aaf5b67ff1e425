// JSON Schema, phase 1: the schema parsed into typed specs. Keywords are checked and
// normalised here: $ref and allOf merged into one schema, anyOf distributing its siblings over
// its branches, if/then/else, dependentSchemas and unevaluated* rewritten, `not` of a type
// subtracted (the rewrites on the schema's JSON are in json_schema_keywords.cpp). Subschemas
// are visited in the order the emitter first needs them, so that the first problem in that
// order is the one reported.
#include "inferlab/constrain/json_schema_spec.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "inferlab/constrain/parser.hpp"
#include "inferlab/constrain/regex.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/base/json_input.hpp"
#include "json_schema_keywords.hpp"

namespace inferlab {

using Json = nlohmann::ordered_json;

namespace {

using schema_keywords::all_types;
using schema_keywords::check_keyword;
using schema_keywords::contains_type;
using schema_keywords::expand_dependencies;
using schema_keywords::expand_if;
using schema_keywords::has_applicator;
using schema_keywords::has_schema_dependencies;
using schema_keywords::is_annotation;
using schema_keywords::merge;
using schema_keywords::only_annotations;
using schema_keywords::subtract_not;
using schema_keywords::types_of;
using schema_keywords::unsupported;
using schema_keywords::without_unevaluated;

// The JSON type name of a value ("number" for integers too).
std::string type_of_value(const Json& v) {
  return v.is_null()      ? "null"
         : v.is_boolean() ? "boolean"
         : v.is_object()  ? "object"
         : v.is_array()   ? "array"
         : v.is_string()  ? "string"
                          : "number";
}

// True when value v is one of `types` (an integral number is an "integer" too).
bool value_has_type(const Json& v, const std::vector<std::string>& types) {
  const bool integral = v.is_number_integer() ||
                        (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  const std::string t = type_of_value(v);
  return contains_type(types, t) || (t == "number" && integral && contains_type(types, "integer"));
}

// A value in the form JSON Schema equality sees: keys sorted, integral numbers as integers.
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

// A count range [lo, hi] (hi = -1: unbounded) set by keywords min_kw / max_kw: false when no
// count is in it. Counts above 1000000 are refused (a guard: large counts are written as
// rules that double, never as copies, see Grammar::repeat).
bool count_range_nonempty(long lo, long hi, const char* min_kw, const char* max_kw) {
  if (hi >= 0 && hi < lo) return false;
  constexpr long kMaxCount = 1000000;
  if (lo > kMaxCount || hi > kMaxCount)
    unsupported(lo > kMaxCount ? min_kw : max_kw, "counts above 1000000");
  return true;
}

// IPv6 (RFC 4291 section 2.2): eight groups of 1-4 hex digits, or fewer around one "::", the
// last two groups possibly an IPv4 address; one alternative per number of groups before "::".
std::string ipv6_regex(const std::string& ipv4) {
  const std::string h = "[0-9a-fA-F]{1,4}";
  std::vector<std::string> alts{fmt::format("({0}:){{7}}{0}", h),
                                fmt::format("({0}:){{6}}{1}", h, ipv4)};
  for (int left = 0; left <= 7; ++left) {
    const int right =
        7 - left;  // groups the "::" leaves room for on its right (it stands for >= 1)
    std::string before = left == 0 ? "" : fmt::format("{0}(:{0}){{{1}}}", h, left - 1);
    std::vector<std::string> after{fmt::format("({0}(:{0}){{0,{1}}})?", h, right - 1)};
    if (right >= 2) after.push_back(fmt::format("({0}:){{0,{1}}}{2}", h, right - 2, ipv4));
    if (right == 0) after = {""};
    std::string tail = after.size() == 1 ? after[0] : "(" + after[0] + "|" + after[1] + ")";
    alts.push_back(before + "::" + tail);
  }
  std::string out = "(";
  for (std::size_t i = 0; i < alts.size(); ++i) out += (i ? "|" : "") + alts[i];
  return out + ")";
}

// The regular language of a `format` the engine enforces (when format is an assertion), or
// std::nullopt for a format it does not know: an annotation, as the specification says.
// Where a format's exact language is not regular or too large (leap seconds at any offset, a
// hostname's total length), the regex is a subset: it may refuse a valid string, never accept
// an invalid one.
std::optional<std::string> format_regex(const Json& f) {
  if (!f.is_string()) throw Error("format must be a string");
  const std::string name = f.get<std::string>();
  // Dates: the days each month has; February 29 only in leap years (divisible by 4, and
  // centuries only when divisible by 400).
  static const std::string year = "[0-9]{4}";
  static const std::string leap_year =
      "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)";
  static const std::string date =
      "(" + year +
      "-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
      "02-(0[1-9]|1[0-9]|2[0-8]))|" +
      leap_year + "-02-29)";
  // RFC 3339 full-time: a leap second (:60) only at 23:59 UTC, written with Z or a zero offset.
  static const std::string offset = "([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string frac = "(\\.[0-9]+)?";
  static const std::string time = "(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]" + frac + offset +
                                  "|23:59:60" + frac + "([Zz]|[+-]00:00))";
  static const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  static const std::string ipv4 = octet + "(\\." + octet + "){3}";
  static const std::string atext = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+";
  // A hostname label: 1-63 letters, digits and hyphens, no hyphen first or last. At most
  // four labels, the last of at most 61: never above the 253 characters a name may have.
  static const std::string label = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";
  static const std::string last_label = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,59}[a-zA-Z0-9])?";
  static const std::string hostname =
      "(" + label + "|" + label + "(\\." + label + "){0,2}\\." + last_label + ")";
  // URI characters (RFC 3986): unreserved, reserved but '#', '[' and ']', and %-escapes; no
  // space, quote, backslash, braces, or anything outside ASCII. One '#' starts the fragment.
  // (An IP-literal host "[...]" is refused: a subset.)
  static const std::string uri_char = "([a-zA-Z0-9._~:/?@!$&'()*+,;=-]|%[0-9a-fA-F]{2})";
  static const std::string fragment = "(#" + uri_char + "*)?";
  static const std::string scheme = "[a-zA-Z][a-zA-Z0-9+.-]*:";
  // A relative reference's first segment holds no ':' (it would read as a scheme).
  static const std::string relative =
      "(([a-zA-Z0-9._~@!$&'()*+,;=-]|%[0-9a-fA-F]{2})*([/?]" + uri_char + "*)?" + fragment + ")";
  static const std::string n = "[0-9]+";
  static const std::string dur_time =
      "T(" + n + "H(" + n + "M(" + n + "S)?)?|" + n + "M(" + n + "S)?|" + n + "S)";
  if (name == "date") return date;
  if (name == "time") return time;
  if (name == "date-time") return date + "[Tt]" + time;
  if (name == "duration") {
    return "P((" + n + "Y(" + n + "M(" + n + "D)?)?|" + n + "M(" + n + "D)?|" + n + "D)(" +
           dur_time + ")?|" + dur_time + "|" + n + "W)";
  }
  if (name == "email") return atext + "(\\." + atext + ")*@" + hostname;
  if (name == "hostname") return hostname;
  if (name == "uuid")
    return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  if (name == "ipv4") return ipv4;
  if (name == "ipv6") return ipv6_regex(ipv4);
  if (name == "uri") return scheme + uri_char + "*" + fragment;
  if (name == "uri-reference")
    return "(" + scheme + uri_char + "*" + fragment + "|" + relative + ")";
  return std::nullopt;
}

// A bound of a non-integer number as decimal digits, or a compile error naming its keyword.
DecimalDigits bound_digits(double v, const char* kw) {
  const auto d = decimal_digits(v);
  if (!d) unsupported(kw, "bounds of a non-integer number must lie within 1e-12 <= |bound| < 1e15");
  return *d;
}

// ---- the parser ----------------------------------------------------------------------------

class SchemaParser {
 public:
  SchemaParser(const Json& root, const JsonSchemaLimits& limits) : root_(root), limits_(limits) {}

  JsonSchemaSpecs parse_root() {
    out_.root = parse(root_, 0);
    return std::move(out_);
  }

 private:
  const Json& root_;
  const JsonSchemaLimits& limits_;
  JsonSchemaSpecs out_;
  std::deque<Json> owned_;                // rewritten schemas (stable addresses)
  std::map<const Json*, int> shared_of_;  // subschema -> its index in out_.shared
  // $ref target (inside root_) -> its flattened form: a target reached through many paths
  // (an allOf of two $refs to the same definition, thirty levels deep) is flattened once.
  std::map<const Json*, Json> flat_of_;
  long visits_ = 0;  // subschemas flattened or parsed so far, against limits_.max_subschemas

  // Counts one more subschema visited; past the budget the compile stops.
  void count_visit() {
    if (++visits_ > limits_.max_subschemas) {
      throw Error(
          fmt::format("schema too large: compiling it visits more than {} subschemas "
                      "($ref and allOf expanded)",
                      limits_.max_subschemas));
    }
  }

  SpecId add(SchemaSpec spec) {
    out_.specs.push_back(std::move(spec));
    return static_cast<SpecId>(out_.specs.size()) - 1;
  }
  const Json& own(Json s) {
    owned_.push_back(std::move(s));
    return owned_.back();
  }
  SpecId any_of(std::vector<SpecId> options) {
    if (options.size() == 1) return options[0];
    return add(AnyOfSpec{std::move(options)});
  }

  // ---- $ref resolution and merging -------------------------------------------------------

  const Json& resolve(const std::string& r) {
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

  // The subschema of `s` (depth levels down) that declares the plain-name fragment `name`:
  // `"$anchor": name`, or draft-07's `"$id": "#name"`; nullptr when none does.
  const Json* find_anchor(const Json& s, const std::string& name, int depth) {
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

  // Inlines $ref and allOf at the top of `s` so that the result is one plain schema.
  Json flatten(const Json& s, int depth) {
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

  // flatten() of a $ref target, computed once per target.
  const Json& flatten_target(const Json& target, int depth) {
    if (const auto it = flat_of_.find(&target); it != flat_of_.end()) return it->second;
    Json flat = flatten(target, depth);
    return flat_of_.emplace(&target, std::move(flat)).first->second;
  }

  // ---- schemas -----------------------------------------------------------------------------

  // A subschema that gets a rule of its own (parsed once, however often it is reached).
  SpecId shared(const Json& s, int depth) {
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

  SpecId parse(const Json& s, int depth) {
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

  SpecId parse_any_of(const Json& s, int depth) {
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

  // oneOf equals anyOf when no instance can satisfy two branches: different types, or
  // different constants. Anything else cannot be decided here: a compile error.
  void check_disjoint(const std::vector<Json>& b, int depth) {
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

  // The values a `not` beside enum/const excludes, when it is a list of them (or a type, or a
  // boolean): true when `v` is excluded.
  bool excluded_by_not(const Json& negated, const Json& v, int depth) {
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

  // enum/const with other keywords beside them (minLength, pattern, format, not, ...): the
  // values the other keywords allow, each checked by the grammar those keywords compile to.
  // Where that grammar is a subset of the schema's language, a valid value may be dropped;
  // an invalid one is never kept.
  std::vector<Json> filter_values(std::vector<Json> values, const Json& siblings, int depth) {
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
      return !check.accepts(check.advance(check.initial_state(), python_json_dumps(v)));
    });
    return values;
  }

  SpecId parse_enum(const Json& s, int depth) {
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

  // ---- strings -----------------------------------------------------------------------------

  SpecId parse_string(const Json& s) {
    const auto min_len = count_kw(s, "minLength");
    const auto max_len = count_kw(s, "maxLength");
    const bool has_pattern = s.contains("pattern");
    const std::optional<std::string> format =
        s.contains("format") && limits_.format_assertion ? format_regex(s["format"]) : std::nullopt;
    const bool has_format = format.has_value();
    if (has_pattern || has_format) {
      if (has_pattern && has_format) unsupported("format", "together with pattern");
      if ((min_len && *min_len > 0) || max_len)
        unsupported(min_len ? "minLength" : "maxLength", "together with pattern or format");
      if (has_pattern && !s["pattern"].is_string()) throw Error("pattern must be a string");
      StringSpec spec;
      spec.regex = has_pattern ? s["pattern"].get<std::string>() : *format;
      spec.search = has_pattern;
      Grammar check;  // the regex's errors are the schema's: found here, not while emitting
      compile_regex(check, *spec.regex, RegexEncoding::json_string, spec.search);
      return add(std::move(spec));
    }
    const long lo = min_len.value_or(0);
    const long hi = max_len ? *max_len : -1;
    if (!count_range_nonempty(lo, hi, "minLength", "maxLength")) return add(NothingSpec{});
    StringSpec spec;
    spec.min_length = static_cast<int>(lo);
    spec.max_length = static_cast<int>(hi);
    return add(std::move(spec));
  }

  // ---- numbers -----------------------------------------------------------------------------

  SpecId parse_number(const Json& s, bool integer) {
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
    if (!integer && bounded) return parse_decimal_range(lo, lo_excl, hi, hi_excl);
    if (!bounded && !mult) return integer ? add(IntegerSpec{}) : add(NumberSpec{});
    IntegerSpec spec;
    if (mult) {
      if (bounded) unsupported("multipleOf", "together with minimum/maximum");
      if (std::floor(*mult) != *mult || *mult > 10000)
        unsupported("multipleOf", "only integer divisors up to 10000");
      spec.multiple_of = static_cast<int>(*mult);
      return add(spec);
    }
    // Integer bounds: [ceil(lo), floor(hi)], exclusive bounds moved in by one, in decimal
    // digits of any length (a bound such as 1e30 is an integer beyond 64 bits).
    spec.bounded = true;
    if (lo) {
      if (!std::isfinite(*lo)) throw Error("minimum must be a finite number");
      const double c = std::ceil(*lo);
      spec.range.min = DecimalInteger::from_double(c);
      if (lo_excl && c == *lo) spec.range.min = spec.range.min->plus(1);
    }
    if (hi) {
      if (!std::isfinite(*hi)) throw Error("maximum must be a finite number");
      const double f = std::floor(*hi);
      spec.range.max = DecimalInteger::from_double(f);
      if (hi_excl && f == *hi) spec.range.max = spec.range.max->plus(-1);
    }
    if (spec.range.min && spec.range.max && *spec.range.max < *spec.range.min)
      return add(NothingSpec{});
    return add(spec);
  }

  // Decimal bounds split at zero: x >= 0 between max(lo, 0) and hi; x < 0 as x = -m, m > 0,
  // where lo <= x <=> m <= -lo and x <= hi <=> m >= -hi.
  SpecId parse_decimal_range(std::optional<double> lo, bool lo_excl, std::optional<double> hi,
                             bool hi_excl) {
    if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_excl || hi_excl)))) return add(NothingSpec{});
    NumberSpec spec;
    spec.bounded = true;
    if (!hi || *hi > 0 || (*hi == 0 && !hi_excl)) {
      MagnitudeRange m;
      if (lo && *lo >= 0) {
        m.min = bound_digits(*lo, lo_excl ? "exclusiveMinimum" : "minimum");
        m.min_exclusive = lo_excl;
      }
      if (hi) m.max = bound_digits(*hi, hi_excl ? "exclusiveMaximum" : "maximum");
      m.max_exclusive = hi_excl;
      spec.range.nonnegative = m;
    }
    if (!lo || *lo < 0) {
      MagnitudeRange m;
      m.min_exclusive = true;  // m > 0 (zero is in the non-negative part)
      if (hi && *hi < 0) {
        m.min = bound_digits(-*hi, hi_excl ? "exclusiveMaximum" : "maximum");
        m.min_exclusive = hi_excl;
      } else {
        m.min = DecimalDigits{};
      }
      if (lo) m.max = bound_digits(-*lo, lo_excl ? "exclusiveMinimum" : "minimum");
      m.max_exclusive = lo_excl;
      spec.range.negative = m;
    }
    return add(std::move(spec));
  }

  // ---- objects -----------------------------------------------------------------------------

  // patternProperties as members a key of each pattern may add, with that pattern's schema.
  // Exact when additionalProperties is false, when no listed name matches a pattern (checked
  // here) and when the patterns' schemas are equal (a key two patterns match must satisfy
  // both). Otherwise a key that matches no pattern would need the complement of the patterns,
  // which is not built: such keys are then refused (`*drops_others` set), a subset of the
  // valid instances. Patterns whose schemas are all `true` constrain nothing and are skipped.
  std::vector<std::pair<std::string, SpecId>> parse_patterns(const Json& s, const Json& props,
                                                             bool* drops_others, int depth) {
    *drops_others = false;
    std::vector<std::pair<std::string, SpecId>> out;
    if (!s.contains("patternProperties")) return out;
    const Json& pp = s["patternProperties"];
    if (!pp.is_object()) throw Error("patternProperties must be an object");
    if (pp.empty()) return out;
    const bool all_true = std::all_of(
        pp.begin(), pp.end(), [](const Json& x) { return x == Json(true) || x == Json::object(); });
    const Json* additional =
        s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    const bool closed = additional && *additional == Json(false);
    if (all_true && !closed) return out;  // every key allowed, every value allowed
    if (s.contains("propertyNames") && s["propertyNames"] != Json(true))
      unsupported("patternProperties", "together with propertyNames");
    for (const auto& [pattern, sub] : pp.items()) {
      if (sub != pp.begin().value()) {
        unsupported("patternProperties",
                    "several patterns with different schemas (a key two patterns match must "
                    "satisfy both)");
      }
      Grammar g;  // the pattern's errors are the schema's; a listed name it matches is refused
      const int body = compile_regex(g, pattern, RegexEncoding::json_string, true);
      g.root = g.add_rule("key");
      g.define(g.root, g.seq({g.literal("\""), body, g.literal("\"")}));
      PushdownParser key(g);
      for (const auto& [name, value] : props.items()) {
        if (key.accepts(key.advance(key.initial_state(), python_json_dumps(Json(name))))) {
          unsupported(
              "patternProperties",
              fmt::format("a pattern ('{}') that matches a listed property ('{}')", pattern, name));
        }
      }
      out.emplace_back(pattern, shared(sub, depth));
    }
    *drops_others = !closed;
    return out;
  }

  SpecId parse_object(const Json& s, int depth) {
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
    // listed like properties whose schema is additionalProperties (or true): then the grammar
    // can force or count them.
    const Json* props_ptr = &schema_props;
    {
      Json listed = schema_props;
      auto list = [&](const std::string& name) {
        if (!listed.contains(name)) listed[name] = additional ? *additional : Json(true);
      };
      for (const auto& r : required) list(r);
      for (const auto& [k, v] : depends) {
        list(k);
        for (const auto& x : v) list(x);
      }
      if (listed.size() != schema_props.size()) {
        if (s.contains("propertyNames") && s["propertyNames"] != Json(true)) {
          unsupported("propertyNames",
                      "together with required or dependentRequired names not in properties");
        }
        props_ptr = &own(std::move(listed));  // stable address: shared() keys subschemas by it
      }
    }
    const Json& props = *props_ptr;
    const auto min_props = count_kw(s, "minProperties");
    const auto max_props = count_kw(s, "maxProperties");
    bool drops_others = false;
    auto patterns = parse_patterns(s, props, &drops_others, depth);
    if (props.empty()) {
      return parse_free_object(s, additional, min_props, max_props, std::move(patterns),
                               drops_others, depth);
    }
    // Counts over the listed properties alone: an object with no other members, in any order
    // (the grammar tracks which were written, so it can count them).
    const bool countable = closed && patterns.empty() &&
                           static_cast<int>(props.size()) <= limits_.max_free_order_properties;
    if (countable && min_props && *min_props > static_cast<long>(props.size()))
      return add(NothingSpec{});
    if (max_props && *max_props < static_cast<long>(required.size())) return add(NothingSpec{});
    if (min_props && *min_props > static_cast<long>(required.size()) && !countable) {
      unsupported("minProperties",
                  "more than the required properties, on an object that allows other members "
                  "or lists more properties than are tracked in any order");
    }
    if (max_props && !countable && (!closed || *max_props < static_cast<long>(props.size()))) {
      unsupported("maxProperties", "fewer than the properties an instance may have");
    }
    ObjectSpec spec;
    std::vector<std::string> names;
    for (const auto& [name, sub] : props.items()) {
      names.push_back(name);
      spec.properties.push_back({name, shared(sub, depth), required.count(name) > 0, 0});
    }
    for (const auto& [k, v] : depends) {
      const auto i =
          static_cast<std::size_t>(std::find(names.begin(), names.end(), k) - names.begin());
      for (const auto& x : v) {
        const auto j =
            static_cast<std::size_t>(std::find(names.begin(), names.end(), x) - names.begin());
        if (j < 64) spec.properties[i].needs |= std::uint64_t{1} << j;
      }
    }
    if (!depends.empty() && static_cast<int>(names.size()) > limits_.max_free_order_properties) {
      unsupported(s.contains("dependentRequired") ? "dependentRequired" : "dependencies",
                  fmt::format("on an object with more than {} listed or required properties",
                              limits_.max_free_order_properties));
    }
    if (!closed && !drops_others)
      spec.additional = additional ? shared(*additional, depth) : add(AnySpec{});
    spec.patterns = std::move(patterns);
    spec.any_order = static_cast<int>(names.size()) <= limits_.max_free_order_properties;
    if (countable) {
      spec.min_members = static_cast<int>(min_props.value_or(0));
      spec.max_members = max_props ? static_cast<int>(*max_props) : -1;
    }
    return add(std::move(spec));
  }

  // An object without listed properties: every member is "additional", its key constrained by
  // propertyNames (as a string schema) and its value by additionalProperties; the member count
  // by minProperties / maxProperties.
  SpecId parse_free_object(const Json& s, const Json* additional, std::optional<long> min_props,
                           std::optional<long> max_props,
                           std::vector<std::pair<std::string, SpecId>> patterns, bool drops_others,
                           int depth) {
    const long lo = min_props.value_or(0);
    long hi = max_props ? *max_props : -1;
    if (additional && additional->is_boolean() && !additional->get<bool>() && patterns.empty())
      hi = 0;
    if (s.contains("propertyNames") && s["propertyNames"].is_boolean() &&
        !s["propertyNames"].get<bool>())
      hi = 0;
    if (!count_range_nonempty(lo, hi, "minProperties", "maxProperties")) return add(NothingSpec{});
    FreeObjectSpec spec;
    spec.min_properties = static_cast<int>(lo);
    spec.max_properties = static_cast<int>(hi);
    if (hi == 0) return add(spec);
    if (s.contains("propertyNames") && !s["propertyNames"].is_boolean()) {
      spec.key = parse(own(merge(flatten(s["propertyNames"], depth + 1), Json{{"type", "string"}})),
                       depth + 1);
    }
    const bool closed = additional && *additional == Json(false);
    if (!closed && !drops_others)
      spec.value = additional ? shared(*additional, depth) : add(AnySpec{});
    spec.patterns = std::move(patterns);
    return add(spec);
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
      if (f.contains("type") && !value_has_type(v, types_of(f))) continue;
      kept.push_back(v);
    }
    return kept;
  }

  // uniqueItems where every item comes from a few scalars: every array of pairwise different
  // values (at most 256 of them), else std::nullopt.
  std::optional<std::vector<std::vector<Json>>> unique_arrays(
      const std::vector<const Json*>& prefix, const Json* rest, bool rest_allowed, long min_items,
      long max_items, int depth) {
    std::vector<std::vector<Json>> at;  // the values allowed at each position
    for (const Json* x : prefix) {
      auto v = few_values(*x, depth);
      if (!v) return std::nullopt;
      at.push_back(std::move(*v));
    }
    std::vector<Json> rest_vals;
    if (rest_allowed) {
      if (!rest) return std::nullopt;
      auto v = few_values(*rest, depth);
      if (!v) return std::nullopt;
      rest_vals = std::move(*v);
    }
    // Unique items from the prefix's values and the rest's: never longer than that.
    long longest = static_cast<long>(at.size() + rest_vals.size());
    if (max_items >= 0) longest = std::min(longest, max_items);
    std::vector<std::vector<Json>> arrays;
    std::vector<Json> picked;
    std::vector<nlohmann::json> seen;
    std::function<bool()> extend = [&]() {
      const long n = static_cast<long>(picked.size());
      if (n >= min_items) {
        arrays.push_back(picked);
        if (arrays.size() > 256) return false;
      }
      if (n >= longest) return true;
      const std::vector<Json>& options =
          n < static_cast<long>(at.size()) ? at[static_cast<std::size_t>(n)] : rest_vals;
      for (const Json& v : options) {
        const nlohmann::json c = canonical(v);
        if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
        picked.push_back(v);
        seen.push_back(c);
        if (!extend()) return false;
        picked.pop_back();
        seen.pop_back();
      }
      return true;
    };
    if (!extend()) return std::nullopt;
    return arrays;
  }

  SpecId parse_array(const Json& s, int depth) {
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
    if (!count_range_nonempty(min_items, max_items, "minItems", "maxItems"))
      return add(NothingSpec{});
    // uniqueItems: true compares every pair of items, which no context-free grammar can do in
    // general; it is a no-op only where an array holds at most one item.
    if (s.contains("uniqueItems") &&
        !(s["uniqueItems"].is_boolean() && !s["uniqueItems"].get<bool>()) &&
        !(max_items >= 0 && max_items <= 1)) {
      if (s.contains("contains")) unsupported("uniqueItems", "together with contains");
      auto arrays = unique_arrays(prefix, rest, rest_allowed, min_items, max_items, depth);
      if (!arrays) {
        unsupported(
            "uniqueItems",
            "on arrays that may hold two or more items that are not all from a few constants "
            "(comparing items is not context-free)");
      }
      return add(UniqueArraySpec{std::move(*arrays)});
    }
    // The schema of an item after the prefix.
    const auto rest_item = [&] { return rest ? shared(*rest, depth) : add(AnySpec{}); };
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
        if (!rest_allowed) return add(NothingSpec{});
        // A match is an item that satisfies both the items schema and contains.
        ContainsArraySpec spec;
        if (rest) {
          const Json contains = flatten(s["contains"], depth + 1);
          spec.match = parse(own(merge(flatten(*rest, depth + 1), contains)), depth + 1);
        } else {
          spec.match = shared(s["contains"], depth);
        }
        spec.item = rest_item();
        spec.min_contains = static_cast<int>(min_contains);
        return add(spec);
      }
    }
    // Items up to the count's limit take their prefix schema; the emitter needs them from the
    // last one back (its rules are numbered in that order).
    const long n_fixed = max_items >= 0 ? std::min(p, max_items) : p;
    ArraySpec spec;
    spec.min_items = static_cast<int>(min_items);
    spec.max_items = static_cast<int>(max_items);
    if (max_items < 0 || n_fixed < max_items) spec.rest = rest_item();
    spec.prefix.resize(static_cast<std::size_t>(n_fixed));
    for (long i = n_fixed; i-- > 0;) {
      spec.prefix[static_cast<std::size_t>(i)] =
          shared(*prefix[static_cast<std::size_t>(i)], depth);
    }
    return add(std::move(spec));
  }
};

}  // namespace

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
  return SchemaParser(schema, limits).parse_root();
}

}  // namespace inferlab
