#pragma once
/// @file json_schema_spec.hpp
/// @brief The first phase of the JSON Schema compiler: a schema parsed into typed specs, one
/// per kind of JSON value it allows, with every keyword checked and normalised on the way.
///
/// json_schema_grammar() runs two phases, as XGrammar's compiler does:
/// 1. parse_json_schema() (json_schema_spec.cpp) reads the schema: $ref and allOf are merged
///    into one schema, if/then/else, dependentSchemas and unevaluated* rewritten into the
///    keywords they amount to, `not` of a type subtracted, every unsupported keyword refused
///    with its name. What comes out is a small tree of specs (integer, string, object, ...)
///    that holds only what the grammar needs, already decided.
/// 2. emit_json_schema() (json_schema_emit.cpp) writes each spec as grammar rules, one emit
///    function per kind; it checks nothing, and never throws.
///
/// A subschema reached through $ref (or properties, items, ...) gets a rule of its own, so
/// that recursive schemas stay finite: a RefSpec calls it. Every other spec is written inline
/// where it is used.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/number_range.hpp"
#include "inferlab/constrain/regex.hpp"

namespace inferlab {

/// @brief Index of a spec in JsonSchemaSpecs::specs.
using SpecId = int;

/// @brief Any JSON value (the schema `true`).
struct AnySpec {};

/// @brief No value at all (the schema `false`, or keywords that contradict each other).
struct NothingSpec {};

/// @brief The value null.
struct NullSpec {};

/// @brief true or false.
struct BooleanSpec {};

/// @brief A string: its characters in the regular languages of some regexes, or any
/// characters; counted by min_length / max_length in both cases.
struct StringSpec {
  /// The regexes the characters match, every one of them: a `pattern` (search semantics: it
  /// may match anywhere unless anchored), the regex of a `format` (the whole string). None:
  /// any characters.
  std::vector<RegexTerm> regexes;
  int min_length = 0;   ///< fewest characters (code points)
  int max_length = -1;  ///< most characters (code points); -1: unbounded
};

/// @brief An integer: any, within a range, or a multiple of a divisor.
struct IntegerSpec {
  bool bounded = false;  ///< true: only the integers of range
  IntegerRange range;    ///< the bounds, when bounded (integers of any size)
  int multiple_of = 0;   ///< > 0: only multiples of it (never together with bounded)
};

/// @brief A number: any, or the decimals (without exponent) within a range.
struct NumberSpec {
  bool bounded = false;  ///< true: only the decimals of range
  DecimalRange range;    ///< the bounds split at zero, when bounded
};

/// @brief An array whose items take their schema by position: a prefix of item schemas (a
/// tuple), then one schema for the rest.
struct ArraySpec {
  std::vector<SpecId> prefix;  ///< the schemas of the first items, those the counts allow
  SpecId rest = -1;            ///< the schema of the items after the prefix; -1: none needed
  int min_items = 0;           ///< fewest items
  int max_items = -1;          ///< most items; -1: unbounded
};

/// @brief An array in which at least min_contains items match a schema (`contains`), any
/// number of other items before, between and after them.
struct ContainsArraySpec {
  SpecId item = -1;      ///< the schema of every item
  SpecId match = -1;     ///< an item that matches: both the item schema and `contains`
  int min_contains = 1;  ///< fewest matching items (>= 1)
};

/// @brief An array with uniqueItems whose items all come from a few scalars: every allowed
/// array of pairwise different values, listed.
struct UniqueArraySpec {
  std::vector<std::vector<nlohmann::ordered_json>> arrays;  ///< the allowed arrays
};

/// @brief An object with listed properties (and names that are required or depended on,
/// listed with the schema of additional properties).
struct ObjectSpec {
  /// @brief One listed property.
  struct Property {
    std::string name;         ///< the key
    SpecId value = -1;        ///< the schema of its value
    bool required = false;    ///< it must be present
    std::uint64_t needs = 0;  ///< bit j: when present, properties[j] must be too
  };
  std::vector<Property> properties;  ///< in the schema's order (never empty)
  SpecId additional = -1;            ///< the value of any other key; -1: no other key allowed
  /// patternProperties: a key (not a listed name) that a pattern matches (JSON Schema's
  /// search semantics), and the schema of its value.
  std::vector<std::pair<std::string, SpecId>> patterns;
  /// true: the properties may come in any order (at most
  /// JsonSchemaLimits::max_free_order_properties of them); false: in the listed order.
  bool any_order = true;
  /// minProperties / maxProperties, counted over the listed properties: only set for objects
  /// in any order with no other members (additional = -1, no patterns).
  int min_members = 0;
  int max_members = -1;  ///< see min_members; -1: no bound
};

/// @brief An object without listed properties: every member is additional, its key
/// constrained by propertyNames, its value by additionalProperties, their count by
/// minProperties / maxProperties.
struct FreeObjectSpec {
  SpecId key = -1;  ///< the schema of a key (a string spec); -1: any string
  /// The schema of a value (unused when max_properties is 0); -1: only the keys of patterns.
  SpecId value = -1;
  std::vector<std::pair<std::string, SpecId>> patterns;  ///< as ObjectSpec::patterns
  int min_properties = 0;   ///< fewest members
  int max_properties = -1;  ///< most members; -1: unbounded
};

/// @brief One of a list of values (enum / const), each compared as JSON Schema does: an
/// integral number also as its other spelling (1 and 1.0), object keys in any order.
struct EnumSpec {
  std::vector<nlohmann::ordered_json> values;  ///< the values, without repeats
};

/// @brief A value any of the options allows (anyOf, a oneOf proved disjoint, a list of types).
struct AnyOfSpec {
  std::vector<SpecId> options;  ///< the alternatives
};

/// @brief A call of the rule of a subschema that has one (JsonSchemaSpecs::shared).
struct RefSpec {
  int target = -1;  ///< index in JsonSchemaSpecs::shared
};

/// @brief A spec of any kind.
using SchemaSpec =
    std::variant<AnySpec, NothingSpec, NullSpec, BooleanSpec, StringSpec, IntegerSpec, NumberSpec,
                 ArraySpec, ContainsArraySpec, UniqueArraySpec, ObjectSpec, FreeObjectSpec,
                 EnumSpec, AnyOfSpec, RefSpec>;

/// @brief A parsed schema: the specs, the subschemas that get a rule of their own, the root.
struct JsonSchemaSpecs {
  std::vector<SchemaSpec> specs;  ///< every spec; specs refer to each other by SpecId
  /// The body of each subschema with a rule of its own, in the order first reached (a
  /// RefSpec's target indexes this; a recursive schema refers to itself through it).
  std::vector<SpecId> shared;
  SpecId root = -1;  ///< the whole schema
};

/// @brief Checks the limits themselves (max_free_order_properties in [0, 64]).
/// @throws inferlab::ParameterError naming the limit.
void check_json_schema_limits(const JsonSchemaLimits& limits);

/// @brief Phase 1: parses and checks @p schema, normalising it into typed specs.
/// @param schema the JSON Schema (an object or a boolean)
/// @param limits the limits on depth, enum sizes, free-order objects; whether `format`
///        asserts
/// @return the specs, ready for emit_json_schema()
/// @throws inferlab::Error naming the unsupported keyword, the bad $ref, or the limit
///         (check_json_schema_limits() first).
JsonSchemaSpecs parse_json_schema(const nlohmann::ordered_json& schema,
                                  const JsonSchemaLimits& limits);

/// @brief Phase 2: writes @p specs as a grammar of the JSON texts they allow, after the rules
/// of plain JSON (whitespace, strings, numbers, any value) that the specs reuse.
/// @param specs the output of parse_json_schema()
/// @param limits the whitespace limit and the free-order limit for objects in enum / const
/// @return the grammar, its root the specs' root
Grammar emit_json_schema(const JsonSchemaSpecs& specs, const JsonSchemaLimits& limits);

/// @brief The grammar of any JSON value (JSON mode), built by the same emitter.
/// @param limits the whitespace limit
/// @return the grammar, its root any JSON value
Grammar emit_json_value(const JsonSchemaLimits& limits);

}  // namespace inferlab
