// Grammar construction helpers and the UTF-8 range encoder shared by the front ends.
#include "inferlab/constrain/grammar.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {
int push(Grammar& g, Expr e) {
  g.exprs.push_back(std::move(e));
  return static_cast<int>(g.exprs.size()) - 1;
}

// Above this many automaton nodes (count x the item's size), a counted repeat is written with
// rules that double (below) instead of as copies of its item.
constexpr long kUnrollBudget = 4096;

// The automaton nodes an expression unrolls to, roughly (a call counts one), capped at `cap`.
long expr_size(const Grammar& g, int e, long cap) {
  const Expr& x = g.exprs[static_cast<std::size_t>(e)];
  long n = 1;
  switch (x.kind) {
    case ExprKind::seq:
    case ExprKind::alt:
      for (const int c : x.children) {
        n += expr_size(g, c, cap);
        if (n > cap) return cap + 1;
      }
      return n;
    case ExprKind::repeat: {
      const long copies = std::max<long>({x.min, x.max, 1}) + (x.max < 0 ? 1 : 0);
      const long child = expr_size(g, x.children[0], cap);
      return child > cap / copies ? cap + 1 : 1 + child * copies;
    }
    default:
      return n;
  }
}

// X{min,max} in O(log max) rules, never unrolled (the classic pushdown counter). With E_k
// the rule of exactly 2^k items (E_0 = X, E_k = E_{k-1} E_{k-1}) and U_k the rule of 0 to
// 2^k - 1 items (U_0 = empty, U_k = U_{k-1} | E_{k-1} U_{k-1}, the two counts disjoint):
// exactly m items are the E_k of m's binary digits in a row, and 0 to n items are
// U_k | E_k (0 to n - 2^k items) for the largest 2^k <= n + 1. The parser's stacks then hold
// the count in binary, a few per state, however large the count.
// Its rules are named count#N_xK and count#N_uK: no GBNF rule name can hold a '#' (a comment
// there), so a grammar cannot call or redefine them by name.
class CountedRepeat {
 public:
  CountedRepeat(Grammar& g, int item)
      : g_(g), item_(item), base_("count#" + std::to_string(g.rules.size())) {}

  int build(long min, long max) {
    std::vector<int> parts;
    for (int k = 0; (min >> k) != 0; ++k) {
      if ((min >> k) & 1) parts.push_back(power(k));
    }
    if (max < 0) {
      parts.push_back(g_.repeat(item_, 0, -1));
    } else if (max > min) {
      parts.push_back(at_most(max - min));
    }
    if (parts.empty()) return g_.empty();
    return g_.seq(std::move(parts));
  }

 private:
  Grammar& g_;
  int item_;
  std::string base_;
  std::vector<int> powers_, belows_;  // rule ids of E_k and U_k

  int power(int k) {  // E_k, exactly 2^k items
    while (static_cast<int>(powers_.size()) <= k) {
      const int r = g_.add_rule(base_ + "_x" + std::to_string(powers_.size()));
      g_.define(r,
                powers_.empty() ? item_ : g_.seq({g_.ref(powers_.back()), g_.ref(powers_.back())}));
      powers_.push_back(r);
    }
    return g_.ref(powers_[static_cast<std::size_t>(k)]);
  }

  int below(int k) {  // U_k, 0 to 2^k - 1 items
    while (static_cast<int>(belows_.size()) <= k) {
      const int j = static_cast<int>(belows_.size());
      const int r = g_.add_rule(base_ + "_u" + std::to_string(j));
      g_.define(r, j == 0 ? g_.empty()
                          : g_.alt({g_.ref(belows_.back()),
                                    g_.seq({power(j - 1), g_.ref(belows_.back())})}));
      belows_.push_back(r);
    }
    return g_.ref(belows_[static_cast<std::size_t>(k)]);
  }

  int at_most(long n) {  // 0 to n items
    int k = 0;
    while ((2L << k) <= n + 1) ++k;  // the largest 2^k <= n + 1
    if ((1L << k) == n + 1) return below(k);
    return g_.alt({below(k), g_.seq({power(k), at_most(n - (1L << k))})});
  }
};
// Whether expression `e` can match the empty string: yes, no, or unknown (a call of a rule
// not defined yet, as in a GBNF file that defines its rules after their use; a member set; or
// more than `budget` nodes visited).
enum class Nullable { no, yes, unknown };

Nullable nullable(const Grammar& g, int e, std::vector<char>& visiting, long& budget) {
  if (--budget < 0) return Nullable::unknown;
  const Expr& x = g.exprs[static_cast<std::size_t>(e)];
  Nullable n = Nullable::no;
  switch (x.kind) {
    case ExprKind::empty:
      return Nullable::yes;
    case ExprKind::bytes:
      return Nullable::no;
    case ExprKind::seq:  // no if any part is no, else unknown if any is unknown
      n = Nullable::yes;
      for (const int c : x.children) {
        const Nullable m = nullable(g, c, visiting, budget);
        if (m == Nullable::no) return m;
        if (m == Nullable::unknown) n = m;
      }
      return n;
    case ExprKind::alt:  // yes if any branch is yes, else unknown if any is unknown
      for (const int c : x.children) {
        const Nullable m = nullable(g, c, visiting, budget);
        if (m == Nullable::yes) return m;
        if (m == Nullable::unknown) n = m;
      }
      return n;
    case ExprKind::repeat:
      return x.min == 0 ? Nullable::yes : nullable(g, x.children[0], visiting, budget);
    case ExprKind::ref: {
      const auto r = static_cast<std::size_t>(x.rule);
      if (g.rules[r].expr < 0) return Nullable::unknown;
      // A rule already on the path adds nothing: a shortest derivation of the empty string
      // never calls the same rule twice along one path.
      if (visiting[r]) return Nullable::no;
      visiting[r] = 1;
      n = nullable(g, g.rules[r].expr, visiting, budget);
      visiting[r] = 0;
      return n;
    }
    default:
      return Nullable::unknown;
  }
}

Nullable nullable(const Grammar& g, int e) {
  std::vector<char> visiting(g.rules.size(), 0);
  long budget = 100000;
  return nullable(g, e, visiting, budget);
}

constexpr const char* kNullableCount =
    "of an expression that can match the empty string is supported only up to 4096 automaton "
    "nodes";
static_assert(kUnrollBudget == 4096, "kNullableCount names the budget");

constexpr int kNothing = -2;  // strip_empty: the language holds only the empty string
constexpr int kCannot = -1;   // strip_empty: no simple expression found

// An expression for the language of `e` without the empty string, built from its parts where
// that is a local rewrite (an alternative's nullable branches stripped, X{a,b} -> X'{1,b});
// kNothing when that language is empty, kCannot for a sequence or a call that is nullable.
int strip_empty(Grammar& g, int e) {
  const Nullable n = nullable(g, e);
  if (n == Nullable::no) return e;
  if (n == Nullable::unknown) return kCannot;
  const Expr x = g.exprs[static_cast<std::size_t>(e)];  // a copy: g.exprs grows below
  switch (x.kind) {
    case ExprKind::empty:
      return kNothing;
    case ExprKind::alt: {
      std::vector<int> kept;
      for (const int c : x.children) {
        const int s = strip_empty(g, c);
        if (s == kCannot) return kCannot;
        if (s != kNothing) kept.push_back(s);
      }
      return kept.empty() ? kNothing : g.alt(std::move(kept));
    }
    case ExprKind::repeat: {
      if (x.max == 0) return kNothing;
      const int s = strip_empty(g, x.children[0]);
      if (s == kCannot || s == kNothing) return s;
      // X{a,b} with X nullable is (X' | empty){0,b}, so without the empty string X'{1,b}.
      return g.repeat(s, 1, x.max);
    }
    default:
      return kCannot;
  }
}
}  // namespace

int Grammar::empty() { return push(*this, Expr{}); }

int Grammar::bytes(const ByteSet& set) {
  Expr e;
  e.kind = ExprKind::bytes;
  e.set = set;
  return push(*this, std::move(e));
}

int Grammar::byte_range(unsigned lo, unsigned hi) {
  ByteSet s;
  s.add_range(lo, hi);
  return bytes(s);
}

int Grammar::literal(std::string_view text) {
  if (text.empty()) return empty();
  std::vector<int> items;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    int& e = byte_exprs[b];
    if (e < 0) e = byte_range(b, b);
    items.push_back(e);
  }
  return items.size() == 1 ? items[0] : seq(std::move(items));
}

int Grammar::seq(std::vector<int> items) {
  if (items.size() == 1) return items[0];
  Expr e;
  e.kind = ExprKind::seq;
  e.children = std::move(items);
  return push(*this, std::move(e));
}

int Grammar::alt(std::vector<int> items) {
  if (items.size() == 1) return items[0];
  Expr e;
  e.kind = ExprKind::alt;
  e.children = std::move(items);
  return push(*this, std::move(e));
}

int Grammar::repeat(int item, int min, int max) {
  // A repeat of a repeat, (X{a,b}){c,d}, is one repeat of X when the languages are equal:
  // X* and X+ absorb any further * + ?, and (X?)? is X?. Without this, nested quantifiers
  // such as a++++ or ((a+)+)+ double the automaton at every level until it hits its size cap.
  const Expr& inner = exprs[static_cast<std::size_t>(item)];
  if (inner.kind == ExprKind::repeat && (max == -1 || max >= 1)) {
    const int a = inner.min, b = inner.max, x = inner.children[0];
    if (b == -1 && min >= 1 && long(a) * min <= 10000) return repeat(x, a * min, -1);
    if (b == -1 && min == 0 && a <= 1) return repeat(x, 0, -1);
    if (a == 0 && b == 1 && max == -1) return repeat(x, 0, -1);
    if (a == 0 && b == 1 && min == 0 && max == 1) return item;
  }
  const long copies = std::max(min, max) + (max < 0 ? 1 : 0);
  if (copies > 2 && expr_size(*this, item, kUnrollBudget) * copies > kUnrollBudget) {
    // The doubling rules assume an item that consumes at least one byte. An item that may
    // match nothing would let the parser's closure thread the empty string through every
    // E_k = E_{k-1} E_{k-1} in 2^k different stacks (the fuzzer's (|){207207} took seconds a
    // byte), so such an X{m,n} becomes X'{0,n}, X' being X without the empty string.
    // (An item whose answer is unknown, a GBNF rule defined further down, keeps the doubling
    // rules as they are.)
    const Nullable n = nullable(*this, item);
    if (n == Nullable::unknown) unchecked_counted_items.push_back(item);
    if (n == Nullable::yes) {
      const int stripped = strip_empty(*this, item);
      if (stripped == kNothing) return empty();
      if (stripped == kCannot) {
        throw Error(fmt::format("a counted repetition {{{},{}}} {}", min,
                                max < 0 ? std::string() : std::to_string(max), kNullableCount));
      }
      if (max < 0) return repeat(stripped, 0, -1);
      return CountedRepeat(*this, stripped).build(0, max);
    }
    return CountedRepeat(*this, item).build(min, max);
  }
  Expr e;
  e.kind = ExprKind::repeat;
  e.children = {item};
  e.min = min;
  e.max = max;
  return push(*this, std::move(e));
}

void Grammar::check_counted_repeats() const {
  for (const int item : unchecked_counted_items) {
    if (nullable(*this, item) != Nullable::no)
      throw Error(fmt::format("a counted repetition {}", kNullableCount));
  }
}

int Grammar::ref(int rule) {
  Expr e;
  e.kind = ExprKind::ref;
  e.rule = rule;
  return push(*this, std::move(e));
}

int Grammar::members_in_any_order(std::string name, MemberSet set) {
  if (set.members.size() > static_cast<std::size_t>(MemberSet::kMaxMembers)) {
    throw Error(fmt::format("more than {} members in any order ({})", MemberSet::kMaxMembers,
                            set.members.size()));
  }
  // Each member (and the additional member) is a rule of its own, called from the set: inside
  // a member the top stack frame is the member's, which carries no mask, so its parser states
  // and their masks (token_mask.hpp's frame masks) are the same whichever members were
  // written before it.
  const auto own_rule = [&](int expr, const std::string& suffix) {
    if (expr < 0 || exprs[static_cast<std::size_t>(expr)].kind == ExprKind::ref) return expr;
    const int rule = add_rule(name + suffix);
    define(rule, expr);
    return ref(rule);
  };
  for (std::size_t i = 0; i < set.members.size(); ++i)
    set.members[i] = own_rule(set.members[i], fmt::format("_member{}", i));
  set.extra = own_rule(set.extra, "_extra");
  member_sets.push_back(std::move(set));
  Expr e;
  e.kind = ExprKind::members;
  e.member_set = static_cast<int>(member_sets.size()) - 1;
  const int rule = add_rule(std::move(name));
  define(rule, push(*this, std::move(e)));
  return ref(rule);
}

int Grammar::add_rule(std::string name) {
  rules.push_back(Rule{std::move(name), -1});
  return static_cast<int>(rules.size()) - 1;
}

int Grammar::find_rule(std::string_view name) const {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// Splits [lo, hi] (same encoded length, no surrogates) until every piece's encodings form a
// product of byte ranges, then emits each piece as a seq of byte ranges.
void split_utf8(Grammar& g, std::uint32_t lo, std::uint32_t hi, std::vector<int>& out) {
  static constexpr std::uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF};
  for (const std::uint32_t end : kLengthEnds) {
    if (lo <= end && hi > end) {
      split_utf8(g, lo, end, out);
      split_utf8(g, end + 1, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out.push_back(g.byte_range(lo, hi));
    return;
  }
  const int n = hi < 0x800 ? 2 : hi < 0x10000 ? 3 : 4;
  for (int i = 1; i < n; ++i) {
    const std::uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_utf8(g, lo, lo | m, out);
        split_utf8(g, (lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_utf8(g, lo, (hi & ~m) - 1, out);
        split_utf8(g, hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  append_utf8(a, lo);
  append_utf8(b, hi);
  std::vector<int> items;
  for (std::size_t i = 0; i < a.size(); ++i) {
    items.push_back(
        g.byte_range(static_cast<unsigned char>(a[i]), static_cast<unsigned char>(b[i])));
  }
  out.push_back(g.seq(std::move(items)));
}

}  // namespace

int utf8_range(Grammar& g, std::uint32_t lo, std::uint32_t hi) {
  std::vector<int> out;
  if (hi > 0x10FFFF) hi = 0x10FFFF;
  // UTF-8 cannot encode surrogates: cut them out of the range.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) split_utf8(g, lo, 0xD7FF, out);
    if (hi > 0xDFFF) split_utf8(g, 0xE000, hi, out);
  } else if (lo <= hi) {
    split_utf8(g, lo, hi, out);
  }
  return g.alt(std::move(out));
}

}  // namespace inferlab
