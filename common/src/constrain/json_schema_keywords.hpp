#pragma once
/// @file json_schema_keywords.hpp
/// @brief JSON Schema keywords on the schema's own JSON, for the parser (json_schema_spec.cpp,
/// the one user): which keywords are annotations and which are refused, the types a schema
/// allows, and the keywords rewritten into others before a schema becomes a spec: the
/// conjunction of two schemas (allOf, $ref with siblings), if/then/else, dependentSchemas,
/// unevaluated*, `not` of a type.

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace inferlab::schema_keywords {

/// @brief The six JSON types ("integer" is a subset of "number").
const std::vector<std::string>& all_types();

/// @brief True for a keyword that never changes which instances are valid: any keyword but
/// the assertions and applicators (title, $defs, readOnly, x-..., any unknown name).
bool is_annotation(const std::string& keyword);

/// @brief True when @p schema is an object of annotations and of keywords in @p except only.
bool only_annotations(const nlohmann::ordered_json& schema,
                      const std::set<std::string>& except = {});

/// @brief True when @p type is in @p types.
bool contains_type(const std::vector<std::string>& types, const std::string& type);

/// @brief The types @p schema allows by its `type` keyword (all six without one).
/// @throws inferlab::Error for a `type` that is not a type name or a list of them.
std::vector<std::string> types_of(const nlohmann::ordered_json& schema);

/// @brief Throws the compile error that names an unsupported @p keyword, and @p why if given.
[[noreturn]] void unsupported(const std::string& keyword, const std::string& why = "");

/// @brief Refuses @p keyword of @p schema when it is one the compiler knows but cannot honour
/// in the form given (patternProperties, dependentSchemas, $dynamicRef, ...); returns for
/// every other keyword, and for the harmless forms (an empty patternProperties, `if` alone).
void check_keyword(const nlohmann::ordered_json& schema, const std::string& keyword);

/// @brief True when @p schema holds a keyword whose subschemas evaluate properties or items of
/// the same instance (allOf, anyOf, $ref, contains, ...).
bool has_applicator(const nlohmann::ordered_json& schema);

/// @brief @p schema (without applicators) with unevaluatedProperties as additionalProperties
/// and unevaluatedItems as the schema of the items after the tuple (each a no-op where that
/// keyword is present already).
nlohmann::ordered_json without_unevaluated(const nlohmann::ordered_json& schema);

/// @brief @p schema with if/then/else as anyOf [allOf [if, then], allOf [not if, else]], exact
/// since the two branches never overlap.
/// @throws inferlab::Error naming `if` for a condition other than a type or a boolean (its
///         negation would not be context-free).
nlohmann::ordered_json expand_if(const nlohmann::ordered_json& schema);

/// @brief True when @p schema has dependentSchemas, or draft-07 dependencies with a schema
/// value.
bool has_schema_dependencies(const nlohmann::ordered_json& schema);

/// @brief @p schema with each schema dependency (key k requires S) as anyOf [k absent,
/// k present and S]; dependencies with array values stay.
nlohmann::ordered_json expand_dependencies(const nlohmann::ordered_json& schema);

/// @brief The @p types left when `not` is @p negated (a boolean, or a schema of a type only).
/// @throws inferlab::Error naming `not` for any other negated schema.
std::vector<std::string> subtract_not(const nlohmann::ordered_json& negated,
                                      std::vector<std::string> types);

/// @brief The conjunction of two flattened schemas (no $ref or allOf at their top), keyword
/// by keyword: types intersected, required names joined, bounds tightened, enums intersected,
/// anyOf lists multiplied out, properties merged by allOf.
/// @throws inferlab::Error naming a keyword whose two values cannot be combined.
nlohmann::ordered_json merge(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b);

}  // namespace inferlab::schema_keywords
