#pragma once
/// @file json_input.hpp
/// @brief Parsing JSON that a user supplies (a schema file, a MaskBench file, a test suite):
/// one checked entry point that refuses what nlohmann's parser would let through.
///
/// nlohmann's parser itself is iterative and accepts any depth, but every walk the project
/// runs over the parsed value (serialising it, comparing values, compiling a schema) is
/// recursive: a value nested 100,000 arrays deep would overflow the stack there. Its lexer
/// also reads a NUL byte as the end of the input, so `{} NUL garbage` would parse. This parser
/// checks both before handing the text to nlohmann, and turns nlohmann's errors into one line
/// that names the input.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace inferlab {

/// @brief The deepest nesting of arrays and objects parse_json_input() accepts by default.
inline constexpr int kMaxJsonInputDepth = 512;

/// @brief The deepest nesting of arrays and objects in @p text (strings skipped), counted
/// without parsing, stopping at the first byte where it exceeds @p limit.
/// @param text the JSON text (need not be valid)
/// @param limit the depth to compare against
/// @param at set to the offset of the bracket that went past @p limit (unchanged otherwise)
/// @return the deepest nesting seen, at most limit + 1
int json_nesting_depth(std::string_view text, int limit, std::size_t& at);

/// @brief Parses @p text as one JSON value, keeping object keys in their order.
/// @param text the whole input: one value, optional whitespace around it, nothing else
/// @param source names the input in errors (a file name, or a flag and its file)
/// @param max_depth the deepest nesting of arrays and objects allowed
/// @return the value
/// @throws inferlab::Error with a one-line message starting with @p source: the input holds
/// a NUL byte (and where), nests deeper than @p max_depth (and where), is not valid JSON
/// (nlohmann's line and column and what it expected), or has bytes after the value.
nlohmann::ordered_json parse_json_input(std::string_view text, const std::string& source,
                                        int max_depth = kMaxJsonInputDepth);

}  // namespace inferlab
