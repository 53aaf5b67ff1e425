// GBNF reader: one pass of recursive descent that emits grammar expressions as it goes.
#include "inferlab/constrain/gbnf.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/utf8.hpp"

namespace inferlab {

namespace {

class GbnfParser {
 public:
  GbnfParser(std::string_view text, std::string_view source) : t_(text), source_(source) {}

  Grammar parse() {
    skip_space(true);
    while (pos_ < t_.size()) {
      const std::size_t at = pos_;
      const std::string name = read_name();
      if (name.empty()) fail(at, "expected a rule name");
      skip_space(false);
      if (t_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      skip_space(true);
      const int rule = rule_id(name, at);
      if (g_.rules[static_cast<std::size_t>(rule)].expr >= 0)
        fail(at, "rule '" + name + "' is defined twice");
      g_.define(rule, parse_alternates(0));
      skip_space(false);
      if (pos_ < t_.size() && t_[pos_] != '\n') fail(pos_, "unexpected character");
      skip_space(true);
    }
    for (std::size_t k = 0; k < g_.rules.size(); ++k) {
      if (g_.rules[k].expr < 0) fail(first_use_[k], "unknown rule '" + g_.rules[k].name + "'");
    }
    g_.root = g_.find_rule("root");
    if (g_.root < 0)
      throw Error(fmt::format("{}: no 'root' rule (the start rule must be named root)", source_));
    return std::move(g_);
  }

 private:
  std::string_view t_;
  std::string_view source_;
  std::size_t pos_ = 0;
  Grammar g_;
  std::vector<std::size_t> first_use_;  // by rule id: where a named rule was first used

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    int line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error(fmt::format("{}:{}:{}: {}", source_, line, col, what));
  }

  int rule_id(const std::string& name, std::size_t at) {
    const int id = g_.find_rule(name);
    if (id >= 0) return id;
    // By rule id: counted repeats add rules of their own between the named ones.
    const int added = g_.add_rule(name);
    first_use_.resize(static_cast<std::size_t>(added) + 1, 0);
    first_use_[static_cast<std::size_t>(added)] = at;
    return added;
  }

  // Skips blanks and comments; newlines only when `newlines` is set.
  void skip_space(bool newlines) {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == '#') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // True when the rest of this line is blank and the next non-blank line starts with '|'.
  bool continues_on_next_line() const {
    std::size_t p = pos_;
    while (p < t_.size() &&
           (t_[p] == ' ' || t_[p] == '\t' || t_[p] == '\r' || t_[p] == '\n' || t_[p] == '#')) {
      if (t_[p] == '#') {
        while (p < t_.size() && t_[p] != '\n') ++p;
      } else {
        ++p;
      }
    }
    return p < t_.size() && t_[p] == '|';
  }

  std::string read_name() {
    const std::size_t start = pos_;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) ||
                                t_[pos_] == '-' || t_[pos_] == '_'))
      ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }

  int parse_alternates(int depth) {
    if (depth > 500) fail(pos_, "groups nested more than 500 deep");
    std::vector<int> alts{parse_sequence(depth)};
    while (true) {
      if (depth == 0 && continues_on_next_line()) skip_space(true);
      if (pos_ >= t_.size() || t_[pos_] != '|') break;
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(depth));
    }
    return g_.alt(std::move(alts));
  }

  int parse_sequence(int depth) {
    std::vector<int> items;
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == '|' || c == ')' || c == '\n') break;
      const std::size_t at = pos_;
      int item;
      if (c == '"') {
        ++pos_;
        item = parse_literal();
      } else if (c == '[') {
        ++pos_;
        item = parse_class();
      } else if (c == '.') {
        ++pos_;
        item = utf8_range(g_, 0, 0x10FFFF);
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        item = parse_alternates(depth + 1);
        skip_space(true);
        if (pos_ >= t_.size() || t_[pos_] != ')') fail(at, "unmatched '('");
        ++pos_;
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
        const std::string name = read_name();
        skip_space(false);
        if (t_.substr(pos_, 3) == "::=") fail(at, "missing newline before rule '" + name + "'");
        item = g_.ref(rule_id(name, at));
      } else {
        fail(at, fmt::format("unexpected character '{}'", c));
      }
      item = parse_postfix(item);
      items.push_back(item);
      skip_space(depth > 0);
    }
    if (items.empty()) return g_.empty();
    return g_.seq(std::move(items));
  }

  int parse_postfix(int item) {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == '*') {
        item = g_.repeat(item, 0, -1);
      } else if (c == '+') {
        item = g_.repeat(item, 1, -1);
      } else if (c == '?') {
        item = g_.repeat(item, 0, 1);
      } else if (c == '{') {
        const std::size_t at = pos_;
        ++pos_;
        skip_space(false);
        const int lo = read_count(at);
        int hi = lo;
        skip_space(false);
        if (pos_ < t_.size() && t_[pos_] == ',') {
          ++pos_;
          skip_space(false);
          hi = pos_ < t_.size() && t_[pos_] == '}' ? -1 : read_count(at);
          skip_space(false);
        }
        if (pos_ >= t_.size() || t_[pos_] != '}') fail(at, "unterminated {m,n}");
        if (hi >= 0 && hi < lo) fail(at, "{m,n} with n < m");
        item = g_.repeat(item, lo, hi);
      } else {
        break;
      }
      ++pos_;
    }
    return item;
  }

  int read_count(std::size_t at) {
    if (pos_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[pos_])))
      fail(at, "expected a number in {m,n}");
    long v = 0;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) {
      v = v * 10 + (t_[pos_++] - '0');
      if (v > 1000000) fail(at, "repetition count above the limit 1000000");
    }
    return static_cast<int>(v);
  }

  std::uint32_t read_hex(int n, std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[pos_])))
        fail(at, "bad hex escape");
      const char c = t_[pos_++];
      v = v * 16 + static_cast<std::uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (v > 0x10FFFF) fail(at, "code point above U+10FFFF");
    return v;
  }

  // One character of a literal or class: an escape or one UTF-8 code point.
  std::uint32_t read_char() {
    const std::size_t at = pos_;
    if (t_[pos_] == '\\') {
      ++pos_;
      if (pos_ >= t_.size()) fail(at, "unterminated escape");
      const char c = t_[pos_++];
      switch (c) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case 'x':
          return read_hex(2, at);
        case 'u':
          return read_hex(4, at);
        case 'U':
          return read_hex(8, at);
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
          return static_cast<unsigned char>(c);
        default:
          fail(at, fmt::format("unknown escape '\\{}'", c));
      }
    }
    const Utf8Char c = decode_utf8(t_, pos_);
    if (c.length == 0) fail(at, "invalid UTF-8");
    pos_ += static_cast<std::size_t>(c.length);
    return c.code_point;
  }

  int parse_literal() {
    const std::size_t at = pos_ - 1;
    std::string bytes;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') fail(at, "unterminated string literal");
      if (t_[pos_] == '"') {
        ++pos_;
        break;
      }
      const std::size_t char_at = pos_;
      const std::uint32_t cp = read_char();
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        fail(char_at, fmt::format("\\u{:04X} is a UTF-16 surrogate, not a character (UTF-8 "
                                  "cannot encode it)",
                                  cp));
      }
      append_utf8(bytes, cp);
    }
    return g_.literal(bytes);
  }

  int parse_class() {
    const std::size_t at = pos_ - 1;
    bool negate = false;
    if (pos_ < t_.size() && t_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> r;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') fail(at, "unterminated character class");
      if (t_[pos_] == ']') {
        ++pos_;
        break;
      }
      const std::uint32_t lo = read_char();
      std::uint32_t hi = lo;
      if (pos_ + 1 < t_.size() && t_[pos_] == '-' && t_[pos_ + 1] != ']') {
        ++pos_;
        if (t_[pos_] == '\n') fail(at, "unterminated character class");
        hi = read_char();
        if (hi < lo) fail(at, "range out of order in character class");
      }
      r.emplace_back(lo, hi);
    }
    std::sort(r.begin(), r.end());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
    for (const auto& [lo, hi] : r) {
      if (!merged.empty() && lo <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, hi);
      } else {
        merged.emplace_back(lo, hi);
      }
    }
    if (negate) {
      std::vector<std::pair<std::uint32_t, std::uint32_t>> comp;
      std::uint32_t next = 0;
      for (const auto& [lo, hi] : merged) {
        if (lo > next) comp.emplace_back(next, lo - 1);
        next = hi + 1;
      }
      if (next <= 0x10FFFF) comp.emplace_back(next, 0x10FFFF);
      merged = std::move(comp);
    }
    std::vector<int> alts;
    for (const auto& [lo, hi] : merged) alts.push_back(utf8_range(g_, lo, hi));
    return g_.alt(std::move(alts));
  }
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view source) {
  return GbnfParser(text, source).parse();
}

}  // namespace inferlab
