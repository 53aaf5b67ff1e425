// Recursive-descent regex parser building a tree of code point classes (regex_tree.hpp), and
// the tree lowered to grammar expressions (compile_regex).
#include "inferlab/constrain/regex.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/utf8.hpp"
#include "regex_tree.hpp"

namespace inferlab::regex_tree {

namespace {

constexpr std::uint32_t kMaxCp = kMaxCodePoint;
constexpr int kMaxRepeat = 1000000;

Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

Ranges complement(const Ranges& in) {
  const Ranges r = normalize(in);
  Ranges out;
  std::uint32_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCp) out.emplace_back(next, kMaxCp);
  return out;
}

Ranges digit_ranges() { return {{'0', '9'}}; }
Ranges word_ranges() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
// ECMAScript's \s: ASCII whitespace plus the Unicode space separators and line terminators.
Ranges space_ranges() {
  return {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
          {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view p) : p_(p) {}

  RegexTree parse(bool search) {
    bool anchored_start = false, anchored_end = false;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      anchored_start = true;
      ++pos_;
    }
    // A final unescaped '$' anchors the end.
    if (!p_.empty() && p_.back() == '$') {
      std::size_t bs = 0;
      for (std::size_t i = p_.size() - 1; i > 0 && p_[i - 1] == '\\'; --i) ++bs;
      if (bs % 2 == 0 && p_.size() - 1 >= pos_) {
        anchored_end = true;
        end_ = p_.size() - 1;
      }
    }
    const int body = parse_alt(0);
    if (!at_end()) fail(p_[pos_] == ')' ? "unmatched ')'" : "unexpected character");
    tree_.root = body;
    if (search) {
      std::vector<int> items;
      const int any = chars({{0, kMaxCp}});
      if (!anchored_start) items.push_back(repeat(any, 0, -1));
      items.push_back(body);
      if (!anchored_end) items.push_back(repeat(any, 0, -1));
      tree_.root = list(NodeKind::seq, std::move(items));
    }
    return std::move(tree_);
  }

 private:
  RegexTree tree_;
  std::string_view p_;
  std::size_t pos_ = 0;
  std::size_t end_ = std::string_view::npos;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("regex error at position {}: {} in /{}/", pos_, what, p_));
  }
  bool at_end() const { return pos_ >= std::min(end_, p_.size()); }
  char peek() const { return p_[pos_]; }

  int parse_alt(int depth) {
    if (depth > 500) fail("groups nested more than 500 deep");
    std::vector<int> branches{parse_seq(depth)};
    while (!at_end() && peek() == '|') {
      ++pos_;
      branches.push_back(parse_seq(depth));
    }
    return list(NodeKind::alt, std::move(branches));
  }

  int parse_seq(int depth) {
    std::vector<int> items;
    while (!at_end() && peek() != '|' && peek() != ')') items.push_back(parse_repeat(depth));
    if (items.empty()) return add(Node{});
    return list(NodeKind::seq, std::move(items));
  }

  int read_int() {
    const std::size_t start = pos_;
    long v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat) fail(fmt::format("repetition count above the limit {}", kMaxRepeat));
      ++pos_;
    }
    return pos_ == start ? -1 : static_cast<int>(v);
  }

  int parse_repeat(int depth) {
    int atom = parse_atom(depth);
    while (!at_end()) {
      const char c = peek();
      int lo = 0, hi = -1;
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        lo = 1;
        ++pos_;
      } else if (c == '?') {
        hi = 1;
        ++pos_;
      } else if (c == '{') {
        const std::size_t save = pos_;
        ++pos_;
        lo = read_int();
        if (lo < 0) {  // not a quantifier: a literal '{'
          pos_ = save;
          return atom;
        }
        hi = lo;
        if (!at_end() && peek() == ',') {
          ++pos_;
          hi = read_int();
        }
        if (at_end() || peek() != '}') fail("unterminated {m,n} quantifier");
        ++pos_;
        if (hi >= 0 && hi < lo) fail(fmt::format("quantifier {{{},{}}} has max < min", lo, hi));
      } else {
        return atom;
      }
      if (!at_end() && peek() == '?') ++pos_;  // lazy: same language
      atom = repeat(atom, lo, hi);
    }
    return atom;
  }

  std::uint32_t read_hex(int digits) {
    std::uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) fail("bad hex escape");
      const char c = peek();
      v = v * 16 + static_cast<std::uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
      ++pos_;
    }
    return v;
  }

  // Reads one UTF-8 encoded code point of the pattern itself.
  std::uint32_t read_cp() {
    const Utf8Char c = decode_utf8(p_, pos_);
    if (c.length == 0) fail("invalid UTF-8 in pattern");
    pos_ += static_cast<std::size_t>(c.length);
    return c.code_point;
  }

  // An escape after '\': a class (\d...) or one code point. Sets `cls` for classes.
  std::uint32_t parse_escape(Ranges& cls, bool in_class) {
    if (at_end()) fail("pattern ends with '\\'");
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'd':
        cls = digit_ranges();
        return 0;
      case 'D':
        cls = complement(digit_ranges());
        return 0;
      case 'w':
        cls = word_ranges();
        return 0;
      case 'W':
        cls = complement(word_ranges());
        return 0;
      case 's':
        cls = space_ranges();
        return 0;
      case 'S':
        cls = complement(space_ranges());
        return 0;
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      case '0':
        return 0;
      case 'x':  // \xHH, or \x{H...} (PCRE's spelling of \u{H...})
      case 'u':
        if (!at_end() && peek() == '{') {
          ++pos_;
          std::uint32_t v = 0;
          int n = 0;
          while (!at_end() && peek() != '}' && n < 6) {
            v = v * 16 + read_hex(1);
            ++n;
          }
          if (n == 0 || at_end() || peek() != '}' || v > kMaxCp)
            fail(fmt::format("bad \\{}{{...}} escape", c));
          ++pos_;
          return v;
        }
        return read_hex(c == 'x' ? 2 : 4);
      case 'b':
        if (in_class) return '\b';
        --pos_;
        fail("word boundary \\b is not supported");
      case 'B':
        --pos_;
        fail("word boundary \\B is not supported");
      case 'p':
      case 'P':
        --pos_;
        fail("Unicode property classes \\p{...} are not supported");
      default:
        if (c >= '1' && c <= '9') {
          --pos_;
          fail("backreferences are not regular and not supported");
        }
        if (std::isalnum(static_cast<unsigned char>(c))) {
          --pos_;
          fail(fmt::format("unknown escape '\\{}'", c));
        }
        --pos_;
        return read_cp();
    }
  }

  int parse_class() {
    // at '[' already consumed
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++pos_;
    }
    Ranges r;
    bool first = true;
    while (true) {
      if (at_end()) fail("unterminated character class");
      if (peek() == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      Ranges cls;
      std::uint32_t lo;
      if (peek() == '\\') {
        ++pos_;
        lo = parse_escape(cls, true);
        if (!cls.empty()) {
          r.insert(r.end(), cls.begin(), cls.end());
          continue;
        }
      } else {
        lo = read_cp();
      }
      std::uint32_t hi = lo;
      if (pos_ + 1 < p_.size() && !at_end() && peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          Ranges c2;
          hi = parse_escape(c2, true);
          if (!c2.empty()) fail("a class escape cannot end a range");
        } else {
          hi = read_cp();
        }
        if (hi < lo) fail("range out of order in character class");
      }
      r.emplace_back(lo, hi);
    }
    return chars(negate ? complement(r) : normalize(r));
  }

  int parse_atom(int depth) {
    const std::size_t at = pos_;
    const char c = peek();
    switch (c) {
      case '(': {
        ++pos_;
        if (!at_end() && peek() == '?') {
          ++pos_;
          if (!at_end() && peek() == ':') {
            ++pos_;
          } else if (!at_end() && peek() == '<' && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' &&
                     p_[pos_ + 1] != '!') {
            while (!at_end() && peek() != '>') ++pos_;
            if (at_end()) fail("unterminated group name");
            ++pos_;
          } else {
            pos_ = at;
            fail("lookaround and inline flags are not supported");
          }
        }
        const int inner = parse_alt(depth + 1);
        if (at_end() || peek() != ')') {
          pos_ = at;
          fail("unmatched '('");
        }
        ++pos_;
        return inner;
      }
      case '[':
        ++pos_;
        return parse_class();
      case '.':
        ++pos_;
        return chars(complement({{'\n', '\n'}, {'\r', '\r'}}));
      case '*':
      case '+':
      case '?':
        fail("quantifier without anything to repeat");
      case '^':
        fail("'^' is only supported at the start of the pattern");
      case '$':
        fail("'$' is only supported at the end of the pattern");
      case '\\': {
        ++pos_;
        Ranges cls;
        const std::uint32_t cp = parse_escape(cls, false);
        return cls.empty() ? chars({{cp, cp}}) : chars(normalize(cls));
      }
      default: {
        const std::uint32_t cp = read_cp();
        return chars({{cp, cp}});
      }
    }
  }

  int add(Node n) {
    tree_.nodes.push_back(std::move(n));
    return static_cast<int>(tree_.nodes.size()) - 1;
  }
  int chars(Ranges r) {
    Node n;
    n.kind = NodeKind::chars;
    n.chars = std::move(r);
    return add(std::move(n));
  }
  int list(NodeKind kind, std::vector<int> children) {
    Node n;
    n.kind = kind;
    n.children = std::move(children);
    return add(std::move(n));
  }
  int repeat(int item, int min, int max) {
    Node n;
    n.kind = NodeKind::repeat;
    n.children = {item};
    n.min = min;
    n.max = max;
    return add(std::move(n));
  }
};

}  // namespace

RegexTree parse_regex(std::string_view pattern, bool search) {
  return RegexParser(pattern).parse(search);
}

}  // namespace inferlab::regex_tree

namespace inferlab {

namespace {

using regex_tree::NodeKind;
using regex_tree::RegexTree;

// The grammar expression of node `n`: one code point of a class spelled as the encoding
// requires, the other kinds as the grammar's own seq / alt / repeat.
int lower(Grammar& g, const RegexTree& t, int n, RegexEncoding enc) {
  const regex_tree::Node& x = t.nodes[static_cast<std::size_t>(n)];
  std::vector<int> items;
  switch (x.kind) {
    case NodeKind::empty:
      return g.empty();
    case NodeKind::chars:
      if (enc == RegexEncoding::json_string) return json_string_chars(g, x.chars, false);
      for (const auto& [lo, hi] : x.chars) items.push_back(utf8_range(g, lo, hi));
      return g.alt(std::move(items));
    case NodeKind::repeat:
      return g.repeat(lower(g, t, x.children[0], enc), x.min, x.max);
    case NodeKind::seq:
    case NodeKind::alt:
      for (const int c : x.children) items.push_back(lower(g, t, c, enc));
      return x.kind == NodeKind::seq ? g.seq(std::move(items)) : g.alt(std::move(items));
  }
  return g.empty();
}

}  // namespace

namespace {
// The alternatives of distinct literals, factored by common prefixes (a trie), so that the
// parser holds one stack per distinct next byte instead of one per literal: 30 escapes that
// all begin with a backslash become one stack reading it.
int literal_trie(Grammar& g, std::vector<std::string> words, std::size_t depth) {
  std::sort(words.begin(), words.end());
  std::vector<int> alts;
  std::size_t i = 0;
  while (i < words.size()) {
    if (words[i].size() == depth) {
      alts.push_back(g.empty());
      ++i;
      continue;
    }
    std::size_t j = i;
    std::vector<std::string> group;
    while (j < words.size() && words[j].size() > depth && words[j][depth] == words[i][depth])
      group.push_back(words[j++]);
    alts.push_back(g.seq(
        {g.literal(words[i].substr(depth, 1)), literal_trie(g, std::move(group), depth + 1)}));
    i = j;
  }
  return alts.size() == 1 ? alts[0] : g.alt(std::move(alts));
}
}  // namespace

int json_string_chars(Grammar& g_, const CodePointRanges& r, bool canonical_only) {
  std::vector<int> alts;
  // JSON string: raw where JSON allows it, escaped otherwise (json.dumps's spelling).
  auto escaped = [&](std::uint32_t cp) {
    switch (cp) {
      case '"':
        return std::string("\\\"");
      case '\\':
        return std::string("\\\\");
      case '\b':
        return std::string("\\b");
      case '\f':
        return std::string("\\f");
      case '\n':
        return std::string("\\n");
      case '\r':
        return std::string("\\r");
      case '\t':
        return std::string("\\t");
      default:
        return fmt::format("\\u{:04x}", cp);
    }
  };
  // Raw ASCII characters form one byte set and the escapes one trie: few parser stacks per
  // character position (the mask walk's cost grows with them).
  ByteSet ascii;
  std::vector<std::string> escapes;
  for (const auto& [lo, hi] : r) {
    std::uint32_t a = lo;
    while (a <= hi) {
      if (a < 0x20 || a == '"' || a == '\\') {
        escapes.push_back(escaped(a));
        ++a;
        continue;
      }
      std::uint32_t b = hi;
      if (a < '"' && b >= '"') b = '"' - 1;
      if (a < '\\' && b >= '\\') b = '\\' - 1;
      if (a < 0x80) ascii.add_range(a, std::min<std::uint32_t>(b, 0x7F));
      if (b >= 0x80) alts.push_back(utf8_range(g_, std::max<std::uint32_t>(a, 0x80), b));
      if (!canonical_only && a <= '/' && b >= '/') escapes.push_back("\\/");
      if (b == 0xFFFFFFFF) break;
      a = b + 1;
    }
  }
  if (!ascii.empty()) alts.push_back(g_.bytes(ascii));
  if (!escapes.empty()) alts.push_back(literal_trie(g_, std::move(escapes), 0));
  return g_.alt(std::move(alts));
}

int compile_regex(Grammar& g, std::string_view pattern, RegexEncoding encoding, bool search) {
  const RegexTree tree = regex_tree::parse_regex(pattern, search);
  return lower(g, tree, tree.root, encoding);
}

Grammar regex_grammar(std::string_view pattern) {
  Grammar g;
  g.root = g.add_rule("regex");
  g.define(g.root, compile_regex(g, pattern, RegexEncoding::utf8, false));
  return g;
}

}  // namespace inferlab
