#pragma once
/// @file regex.hpp
/// @brief Regular expressions (the usual syntax) compiled into the byte-level grammar.
///
/// Supported: literals, `.`, classes `[a-z]` / `[^...]`, escapes (`\d \w \s \D \W \S \n \t \r
/// \f \v \xHH \uHHHH` and escaped punctuation), groups `( )`, `(?: )`, `(?<name> )`,
/// alternation `|`, quantifiers `* + ? {m} {m,} {m,n}` (a lazy `?` suffix is accepted: laziness
/// does not change the language), `^` at the start and `$` at the end. Rejected with the
/// position: backreferences, lookaround, word boundaries, Unicode property classes.
/// Characters are code points; they become their UTF-8 bytes, or, inside a JSON string, their
/// JSON spellings (`"` as `\"`, control characters escaped as json.dumps writes them).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inferlab/constrain/grammar.hpp"

namespace inferlab {

/// @brief How a regex's characters are spelled in the constrained bytes.
enum class RegexEncoding {
  utf8,         ///< raw UTF-8 (a `--regex` constraint)
  json_string,  ///< the inside of a JSON string literal (a JSON Schema `pattern`)
};

/// @brief Appends an expression for @p pattern to @p g and returns its index.
/// @param g the grammar the expression is added to
/// @param pattern the regular expression (UTF-8)
/// @param encoding how its characters are spelled in the constrained bytes
/// @param search true: JSON Schema semantics, the pattern may match anywhere in the string
///        unless anchored by `^` / `$`; false: the whole text must match.
/// @return the index of the new expression in g.exprs
/// @throws inferlab::Error "regex error at position N: ..." (N counts bytes from 0).
int compile_regex(Grammar& g, std::string_view pattern, RegexEncoding encoding, bool search);

/// @brief One regex a string must match.
struct RegexTerm {
  std::string pattern;  ///< the regular expression (UTF-8)
  bool search = true;   ///< as compile_regex()'s @p search
};

/// @brief Appends an expression for the strings that match every regex of @p regexes and
/// have @p min_length to @p max_length code points (JSON Schema's `pattern` and `format`
/// with `minLength` / `maxLength`), and returns its index. One regex without bounds is
/// compile_regex(). Otherwise the regexes become code point automata (subset construction),
/// and the expression is their product with a counter of the code points read: one rule per
/// product state. A counter state is kept only while the bounds still decide something: once
/// every completion of the regexes fits the bounds, the state is the regexes' own.
/// @param g the grammar the expression is added to
/// @param regexes the regexes (at least one)
/// @param min_length fewest code points
/// @param max_length most code points, -1 for no bound
/// @param encoding how the characters are spelled in the constrained bytes
/// @return the index of the new expression in g.exprs (it matches nothing when no string
///         satisfies all of them)
/// @throws inferlab::Error as compile_regex(), and "grammar too large: ..." when an automaton
///         or the product passes its state limit.
/// @note Cost: states of the regexes' product times the counts the bounds distinguish (at
/// most max_length + 1), a few automaton nodes each.
int compile_string_language(Grammar& g, const std::vector<RegexTerm>& regexes, int min_length,
                            int max_length, RegexEncoding encoding);

/// @brief A whole grammar whose language is the UTF-8 strings fully matching @p pattern.
/// @throws inferlab::Error as compile_regex().
Grammar regex_grammar(std::string_view pattern);

}  // namespace inferlab

namespace inferlab {

/// @brief Inclusive code point ranges [first, second].
using CodePointRanges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

/// @brief Appends an expression matching one code point of @p ranges as it may be spelled
/// inside a JSON string: raw UTF-8 where JSON allows it, `\"`, `\\`, `\b \f \n \r \t`, other
/// control characters as `\u00xx`. With @p canonical_only false, `/` may also be `\/`.
/// canonical_only true gives json.dumps(ensure_ascii=False)'s single spelling of each
/// character, so that equal strings have equal bytes (used to exclude known property names).
int json_string_chars(Grammar& g, const CodePointRanges& ranges, bool canonical_only);

}  // namespace inferlab
