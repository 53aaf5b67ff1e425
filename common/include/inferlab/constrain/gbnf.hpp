#pragma once
/// @file gbnf.hpp
/// @brief Context-free grammars in llama.cpp's GBNF format, compiled into the byte grammar.
///
/// `name ::= alternatives`; an alternative is a sequence of string literals `"..."` (escapes
/// `\n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH`), character classes `[a-z]` / `[^"\\]`, `.` (any
/// character), rule names and parenthesised groups, each optionally followed by `* + ?` or
/// `{m}`, `{m,}`, `{m,n}`. `#` starts a comment. A rule ends at the end of its line unless a
/// group is open or the line ends with `::=` or `|` (or the next line starts with `|`).
/// The start rule is `root`. Characters are code points, matched as their UTF-8 bytes.

#include <string_view>

#include "inferlab/constrain/grammar.hpp"

namespace inferlab {

/// @brief Parses GBNF @p text. @p source names the file in messages.
/// @throws inferlab::Error "SOURCE:LINE:COLUMN: ..." for syntax errors, unknown rule names,
/// a missing `root` rule, and rules defined twice.
Grammar parse_gbnf(std::string_view text, std::string_view source = "grammar");

}  // namespace inferlab
