// JSON Schema keywords on the schema's JSON: annotations, refused keywords, types, and the
// keywords rewritten into others before the parser turns a schema into specs.
#include "json_schema_keywords.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab::schema_keywords {

using Json = nlohmann::ordered_json;

namespace {

// Keywords that can change which instances are valid (assertions and applicators, and those
// that change how $ref resolves). Every other keyword, known (title, $defs, readOnly, ...) or
// not (x-..., enumNames, _id, ...), is an annotation: ignored wherever it stands.
// clang-format off
const std::set<std::string> kConstraining = {
    "type",          "enum",             "const",            "properties",
    "required",      "additionalProperties", "patternProperties", "propertyNames",
    "minProperties", "maxProperties",    "dependentRequired", "dependencies",
    "dependentSchemas", "items",         "prefixItems",      "additionalItems",
    "contains",      "minContains",      "maxContains",      "minItems",
    "maxItems",      "uniqueItems",      "minLength",        "maxLength",
    "pattern",       "format",           "minimum",          "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf",    "allOf",
    "anyOf",         "oneOf",            "not",              "if",
    "then",          "else",             "$ref",             "$dynamicRef",
    "$dynamicAnchor", "$recursiveRef",   "$recursiveAnchor", "unevaluatedProperties",
    "unevaluatedItems"};
// clang-format on
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

}  // namespace

const std::vector<std::string>& all_types() { return kAllTypes; }

bool is_annotation(const std::string& k) { return kConstraining.count(k) == 0; }

void unsupported(const std::string& kw, const std::string& why) {
  throw Error(
      fmt::format("unsupported JSON Schema keyword '{}'{}", kw, why.empty() ? "" : ": " + why));
}

bool only_annotations(const Json& s, const std::set<std::string>& except) {
  if (!s.is_object()) return false;
  for (const auto& [k, v] : s.items()) {
    if (!is_annotation(k) && !except.count(k)) return false;
  }
  return true;
}

bool contains_type(const std::vector<std::string>& types, const std::string& t) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

std::vector<std::string> types_of(const Json& s) {
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
    if (x != "integer" && !contains_type(kAllTypes, x))
      throw Error(fmt::format("unknown type '{}'", x));
  }
  return t;
}

// Keywords whose subschemas evaluate properties or items of the same instance: with none of
// them, "unevaluated" means "not matched by properties / items of this schema itself".
bool has_applicator(const Json& s) {
  for (const char* k :
       {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
        "$ref", "$dynamicRef", "$recursiveRef", "patternProperties", "contains"}) {
    if (s.contains(k)) return true;
  }
  return false;
}

// unevaluatedProperties becomes additionalProperties (when that is absent; else every
// property is evaluated already and it is a no-op); unevaluatedItems becomes the schema of
// the items after prefixItems (when items is absent; else a no-op).
Json without_unevaluated(const Json& s) {
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
Json expand_if(const Json& s) {
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
    branch =
        Json{{"anyOf", Json::array({Json{{"allOf", Json::array({cond, then_s})}},
                                    Json{{"allOf", Json::array({Json{{"not", cond}}, else_s})}}})}};
  } else {
    unsupported(
        "if", "a condition other than a type or a boolean (its negation is not context-free here)");
  }
  return Json{{"allOf", Json::array({rest, branch})}};
}

// dependentSchemas (draft-07: dependencies with schema values): when key k is present, the
// object must also satisfy S. Exactly: (k absent) or (k present and S), where "k absent" is
// properties {k: false}. Both branches accept every non-object, as the keyword does.
bool has_schema_dependencies(const Json& s) {
  if (s.contains("dependentSchemas") && s["dependentSchemas"].is_object() &&
      !s["dependentSchemas"].empty())
    return true;
  if (!s.contains("dependencies") || !s["dependencies"].is_object()) return false;
  return std::any_of(s["dependencies"].begin(), s["dependencies"].end(),
                     [](const Json& v) { return !v.is_array(); });
}

Json expand_dependencies(const Json& s) {
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
    Json lists = Json::object();  // the array form stays for the object's own parse
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

// Keywords of kUnsupported are refused, except in the forms that are harmless.
void check_keyword(const Json& s, const std::string& k) {
  if (!kUnsupported.count(k)) return;
  if (k == "patternProperties" && s[k].is_object() && s[k].empty()) return;
  if ((k == "dependentRequired" || k == "dependencies" || k == "dependentSchemas") &&
      s[k].is_object() && s[k].empty())
    return;
  // Lists of names: the object's parse tracks them (schema dependencies stay an error there).
  if (k == "dependentRequired") return;
  if (k == "dependencies" && s[k].is_object() &&
      std::all_of(s[k].begin(), s[k].end(), [](const Json& v) { return v.is_array(); })) {
    return;
  }
  if (k == "if" && !s.contains("then") && !s.contains("else")) return;  // if alone: no-op
  if ((k == "then" || k == "else") && !s.contains("if")) return;        // ignored without if
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

// The types left after `not` (a boolean or a schema of only a type).
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
      if (contains_type(types, "integer")) std::erase(types, "integer");
      if (contains_type(types, "number"))
        unsupported("not", "'not integer' of a number is not context-free here");
    } else {
      std::erase(types, t);
    }
  }
  return types;
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
        unsupported("allOf", "combining objects whose properties and additionalProperties differ");
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

}  // namespace inferlab::schema_keywords
