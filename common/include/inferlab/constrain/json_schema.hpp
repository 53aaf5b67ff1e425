#pragma once
/// @file json_schema.hpp
/// @brief JSON Schema (draft 2020-12 and draft-07) and JSON mode compiled into the byte grammar.
///
/// Honoured: type (incl. lists), properties / required / additionalProperties (false, true,
/// schema), enum and const (with other keywords beside them: the values those allow), anyOf,
/// oneOf (when its branches are provably disjoint; see JsonSchemaLimits::one_of_as_any_of),
/// allOf and $ref with siblings (merged), $ref / $defs / definitions (recursive too; to a
/// JSON pointer or an $anchor), items / prefixItems / additionalItems, minItems / maxItems,
/// minLength / maxLength, pattern, format (date-time, date, time, duration, email, hostname,
/// ipv4, ipv6, uuid, uri, uri-reference; any other format is an annotation, and all are with
/// JsonSchemaLimits::format_assertion false), minimum / maximum / exclusive bounds for
/// integers (of any size) and numbers (numbers then without exponent), multipleOf for
/// integers, `not` of a type, dependentRequired (and draft-07 dependencies with array
/// values; a required or dependent name outside properties takes additionalProperties'
/// schema), propertyNames / minProperties / maxProperties on objects without listed
/// properties (minProperties / maxProperties also on objects with no other members),
/// patternProperties (where other keys are allowed, a key no pattern matches is refused: a
/// subset), unevaluatedProperties / unevaluatedItems in schemas without applicators,
/// uniqueItems false (or true where every item is one of a few scalars). Any keyword that
/// does not constrain instances (title, description, examples, readOnly, x-..., any unknown
/// name) is an annotation and ignored wherever it stands, as the specification says. Every
/// other keyword is a compile error naming it: it is never silently dropped.
///
/// Object members may come in any order (each listed property at most once, the required ones
/// at least once, additional properties anywhere between them) up to
/// JsonSchemaLimits::max_free_order_properties listed properties; above that, in the schema's
/// order (required ones present, optional ones optional), then any additional properties: a
/// valid instance whose keys come in another order is then rejected (the grammar is a subset
/// of the schema, never a superset).
///
/// The compiler runs in two phases (json_schema_spec.hpp): the schema is parsed into typed
/// specs, checked and normalised, then each spec is emitted as grammar rules; numeric bounds
/// become regular languages in number_range.hpp, object members in object_members.hpp.

#include <string>

#include <nlohmann/json.hpp>

#include "inferlab/constrain/grammar.hpp"

namespace inferlab {

/// @brief Limits applied while compiling a schema.
struct JsonSchemaLimits {
  int max_depth = 128;           ///< nesting of subschemas (and $ref expansion inside allOf)
  int max_enum_values = 100000;  ///< values in one enum
  /// The compile budget: subschemas visited while compiling, each $ref and allOf expansion
  /// counted (a chain of definitions each an allOf of two $refs to the next would otherwise
  /// double the work per level).
  long max_subschemas = 200000;
  /// Longest run of whitespace between tokens (-1: unbounded). JSON allows any amount, but a
  /// model whose masked distribution favours spaces could then pad forever; the text starts
  /// with the value itself for the same reason.
  int max_whitespace = 32;
  /// true: `format` is an assertion (the supported formats are enforced, an unknown one is a
  /// compile error), which is what generation wants. false: `format` is an annotation, as draft
  /// 2020-12 and draft-07 specify by default (and the JSON-Schema-Test-Suite checks): it
  /// constrains nothing. The MaskBench runner uses false.
  bool format_assertion = true;
  /// Objects with at most this many listed properties (and const / enum objects with at most
  /// this many keys) accept them in any order, the parser tracking which were written in a
  /// bit mask (one automaton branch per property, see MemberSet). Above it, properties must
  /// come in the schema's order: a subset of the valid instances, never a superset. At most
  /// MemberSet::kMaxMembers (64).
  int max_free_order_properties = 64;
  /// false (the default): a oneOf whose branches may overlap is a compile error, since an
  /// instance that two branches accept is invalid and a grammar cannot count matches. true:
  /// such a oneOf compiles as anyOf (llguidance's opt-in rule), which accepts those invalid
  /// instances too: a superset of the schema's language.
  bool one_of_as_any_of = false;
};

/// @brief Compiles @p schema into a grammar of the JSON texts that satisfy it.
/// @throws inferlab::Error naming the unsupported keyword, the bad $ref, or the limit.
Grammar json_schema_grammar(const nlohmann::ordered_json& schema,
                            const JsonSchemaLimits& limits = {});

/// @brief The grammar of any JSON value (JSON mode): whitespace between tokens as RFC 8259
/// allows, up to JsonSchemaLimits::max_whitespace in a row, none before or after the value.
Grammar json_mode_grammar(const JsonSchemaLimits& limits = {});

/// @brief Serialises @p value as Python's `json.dumps(value)` does by default: separators
/// `", "` and `": "`, non-ASCII kept as UTF-8 (ensure_ascii=False), floats in repr form.
std::string python_json_dumps(const nlohmann::ordered_json& value);

}  // namespace inferlab
