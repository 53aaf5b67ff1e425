// Checked JSON parsing for user input: a NUL byte and the nesting depth are checked on the raw
// bytes first (the two things nlohmann's parser lets through), then nlohmann parses.
#include "inferlab/base/json_input.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

int json_nesting_depth(std::string_view text, int limit, std::size_t& at) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped byte cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (depth > limit) {
        at = i;
        return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

nlohmann::ordered_json parse_json_input(std::string_view text, const std::string& source,
                                        int max_depth) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(fmt::format("{}: a NUL byte at byte {} (JSON text never holds one)", source, nul));
  std::size_t at = 0;
  if (json_nesting_depth(text, max_depth, at) > max_depth) {
    throw Error(
        fmt::format("{}: arrays and objects nested deeper than the limit of {} levels "
                    "(at byte {})",
                    source, max_depth, at));
  }
  try {
    return nlohmann::ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // A parse error, or a number too large for a double (out_of_range.406). nlohmann's text is
    // "[json.exception.parse_error.101] parse error at line 1, column 3: ...": keep what
    // follows the bracketed id, on one line.
    std::string what = e.what();
    if (const auto close = what.find("] ");
        what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    for (char& ch : what) {
      if (ch == '\n' || ch == '\r') ch = ' ';
    }
    throw Error(fmt::format("{}: not valid JSON: {}", source, what));
  }
}

}  // namespace inferlab
