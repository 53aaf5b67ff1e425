// JSON Schema, phase 1, objects and arrays: properties, required and dependent names,
// patternProperties, additional members and their counts; tuples, items, their counts and
// uniqueItems over a few scalar values.

#include <algorithm>
#include <set>

#include "inferlab/constrain/parser.hpp"
#include "inferlab/constrain/regex.hpp"
#include "json_schema_parser.hpp"

namespace inferlab::schema_parser {

std::vector<std::pair<std::string, SpecId>> SchemaParser::parse_patterns(const Json& s,
                                                                         const Json& props,
                                                                         bool* drops_others,
                                                                         int depth) {
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
      if (key.matches(python_json_dumps(Json(name)))) {
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

SpecId SchemaParser::parse_object(const Json& s, int depth) {
  static const Json kEmpty = Json::object();
  const Json& schema_props = s.contains("properties") ? s["properties"] : kEmpty;
  if (!schema_props.is_object()) throw Error("properties must be an object");
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) throw Error("required must be an array");
    for (const auto& r : s["required"]) {
      if (!r.is_string()) throw Error(fmt::format("required must list strings, not {}", r.dump()));
      required.insert(r.get<std::string>());
    }
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
    std::vector<std::string> unlisted;  // in the order they are listed after the properties
    auto list = [&](const std::string& name) {
      if (!schema_props.contains(name) &&
          std::find(unlisted.begin(), unlisted.end(), name) == unlisted.end())
        unlisted.push_back(name);
    };
    for (const auto& r : required) list(r);
    for (const auto& [k, v] : depends) {
      list(k);
      for (const auto& x : v) list(x);
    }
    if (!unlisted.empty()) {  // (copying the properties only then: they hold every subschema)
      if (s.contains("propertyNames") && s["propertyNames"] != Json(true)) {
        unsupported("propertyNames",
                    "together with required or dependentRequired names not in properties");
      }
      Json listed = schema_props;
      for (const auto& name : unlisted) listed[name] = additional ? *additional : Json(true);
      props_ptr = &own(std::move(listed));  // stable address: shared() keys subschemas by it
    }
  }
  const Json& props = *props_ptr;
  const auto min_props = count_kw(s, "minProperties");
  const auto max_props = count_kw(s, "maxProperties");
  bool drops_others = false;
  auto patterns = parse_patterns(s, props, &drops_others, depth);
  if (props.empty()) {
    return parse_free_object(s, additional, min_props, max_props, std::move(patterns), drops_others,
                             depth);
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

SpecId SchemaParser::parse_free_object(const Json& s, const Json* additional,
                                       std::optional<long> min_props, std::optional<long> max_props,
                                       std::vector<std::pair<std::string, SpecId>> patterns,
                                       bool drops_others, int depth) {
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

std::optional<std::vector<Json>> SchemaParser::few_values(const Json& sub, int depth) {
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

std::optional<std::vector<std::vector<Json>>> SchemaParser::unique_arrays(
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

SpecId SchemaParser::parse_array(const Json& s, int depth) {
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
      unsupported("uniqueItems",
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
    spec.prefix[static_cast<std::size_t>(i)] = shared(*prefix[static_cast<std::size_t>(i)], depth);
  }
  return add(std::move(spec));
}

}  // namespace inferlab::schema_parser
