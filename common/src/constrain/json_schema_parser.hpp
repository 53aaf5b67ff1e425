#pragma once
/// @file json_schema_parser.hpp
/// @brief JSON Schema, phase 1 (private to its three sources): the parser from a schema's JSON
/// to typed specs, and the helpers its parts share. json_schema_spec.cpp holds $ref
/// resolution, anyOf / oneOf / enum and the dispatch on a schema's types;
/// json_schema_scalars.cpp strings (formats) and numbers; json_schema_containers.cpp objects
/// and arrays.

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/json_schema_spec.hpp"
#include "json_schema_keywords.hpp"

namespace inferlab::schema_parser {

/// @brief Schemas keep their keys in the order written (the order errors are reported in).
using Json = nlohmann::ordered_json;

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

/// @brief True when value @p v is one of @p types (an integral number is an "integer" too).
bool value_has_type(const Json& v, const std::vector<std::string>& types);

/// @brief @p v in the form JSON Schema equality sees: keys sorted, integral numbers as
/// integers.
nlohmann::json canonical(const Json& v);

/// @brief The count keyword @p k of @p s (minLength, maxItems, ...), capped at 1e9; nullopt
/// when absent. @throws inferlab::Error when it is not a non-negative integer.
std::optional<long> count_kw(const Json& s, const char* k);

/// @brief A count range [lo, hi] (hi = -1: unbounded) set by keywords min_kw / max_kw: false
/// when no count is in it. Counts above 1000000 are refused (a guard: large counts are
/// written as rules that double, never as copies, see Grammar::repeat).
bool count_range_nonempty(long lo, long hi, const char* min_kw, const char* max_kw);

// ---- the parser ----------------------------------------------------------------------------

/// @brief Parses one schema (and the subschemas it reaches) into JsonSchemaSpecs.
class SchemaParser {
 public:
  /// @brief A parser of @p root under @p limits; both must outlive it.
  SchemaParser(const Json& root, const JsonSchemaLimits& limits) : root_(root), limits_(limits) {}

  /// @brief The specs of the whole schema (call once).
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

  const Json& resolve(const std::string& r);

  // The subschema of `s` (depth levels down) that declares the plain-name fragment `name`:
  // `"$anchor": name`, or draft-07's `"$id": "#name"`; nullptr when none does.
  const Json* find_anchor(const Json& s, const std::string& name, int depth);

  // Inlines $ref and allOf at the top of `s` so that the result is one plain schema.
  Json flatten(const Json& s, int depth);

  // flatten() of a $ref target, computed once per target.
  const Json& flatten_target(const Json& target, int depth);

  // ---- schemas -----------------------------------------------------------------------------

  // A subschema that gets a rule of its own (parsed once, however often it is reached).
  SpecId shared(const Json& s, int depth);

  SpecId parse(const Json& s, int depth);

  SpecId parse_any_of(const Json& s, int depth);

  // oneOf equals anyOf when no instance can satisfy two branches: different types, or
  // different constants. Anything else cannot be decided here: a compile error.
  void check_disjoint(const std::vector<Json>& b, int depth);

  // The values a `not` beside enum/const excludes, when it is a list of them (or a type, or a
  // boolean): true when `v` is excluded.
  bool excluded_by_not(const Json& negated, const Json& v, int depth);

  // enum/const with other keywords beside them (minLength, pattern, format, not, ...): the
  // values the other keywords allow, each checked by the grammar those keywords compile to.
  // Where that grammar is a subset of the schema's language, a valid value may be dropped;
  // an invalid one is never kept.
  std::vector<Json> filter_values(std::vector<Json> values, const Json& siblings, int depth);

  SpecId parse_enum(const Json& s, int depth);

  // ---- strings -----------------------------------------------------------------------------

  SpecId parse_string(const Json& s);

  // ---- numbers -----------------------------------------------------------------------------

  SpecId parse_number(const Json& s, bool integer);

  // Decimal bounds split at zero: x >= 0 between max(lo, 0) and hi; x < 0 as x = -m, m > 0,
  // where lo <= x <=> m <= -lo and x <= hi <=> m >= -hi.
  SpecId parse_decimal_range(std::optional<double> lo, bool lo_excl, std::optional<double> hi,
                             bool hi_excl);

  // ---- objects -----------------------------------------------------------------------------

  // patternProperties as members a key of each pattern may add, with that pattern's schema.
  // Exact when additionalProperties is false, when no listed name matches a pattern (checked
  // here) and when the patterns' schemas are equal (a key two patterns match must satisfy
  // both). Otherwise a key that matches no pattern would need the complement of the patterns,
  // which is not built: such keys are then refused (`*drops_others` set), a subset of the
  // valid instances. Patterns whose schemas are all `true` constrain nothing and are skipped.
  std::vector<std::pair<std::string, SpecId>> parse_patterns(const Json& s, const Json& props,
                                                             bool* drops_others, int depth);

  SpecId parse_object(const Json& s, int depth);

  // An object without listed properties: every member is "additional", its key constrained by
  // propertyNames (as a string schema) and its value by additionalProperties; the member count
  // by minProperties / maxProperties.
  SpecId parse_free_object(const Json& s, const Json* additional, std::optional<long> min_props,
                           std::optional<long> max_props,
                           std::vector<std::pair<std::string, SpecId>> patterns, bool drops_others,
                           int depth);

  // ---- arrays ------------------------------------------------------------------------------

  // The values a schema allows when they are a few scalars (a boolean or null type, an enum or
  // const of scalars), else std::nullopt.
  std::optional<std::vector<Json>> few_values(const Json& sub, int depth);

  // uniqueItems where every item comes from a few scalars: every array of pairwise different
  // values (at most 256 of them), else std::nullopt.
  std::optional<std::vector<std::vector<Json>>> unique_arrays(
      const std::vector<const Json*>& prefix, const Json* rest, bool rest_allowed, long min_items,
      long max_items, int depth);

  SpecId parse_array(const Json& s, int depth);
};

}  // namespace inferlab::schema_parser
