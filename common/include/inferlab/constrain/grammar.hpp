#pragma once
/// @file grammar.hpp
/// @brief The one representation every constraint compiles to: a context-free grammar whose
/// terminals are sets of bytes. Regexes, GBNF files, JSON Schemas and JSON mode are all turned
/// into a Grammar, and one engine (parser.hpp) runs them all, byte by byte.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab {

/// @brief A set of byte values (a 256-bit bitmap): the terminal of the byte-level grammars.
struct ByteSet {
  std::array<std::uint64_t, 4> bits{};  ///< bit b set = byte b is in the set

  /// @brief Adds byte @p b.
  void add(unsigned b) { bits[b >> 6] |= std::uint64_t{1} << (b & 63); }
  /// @brief Removes byte @p b.
  void remove(unsigned b) { bits[b >> 6] &= ~(std::uint64_t{1} << (b & 63)); }
  /// @brief Adds every byte in [@p lo, @p hi].
  void add_range(unsigned lo, unsigned hi) {
    for (unsigned b = lo; b <= hi; ++b) add(b);
  }
  /// @brief True when byte @p b is in the set.
  bool has(unsigned b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  /// @brief True when no byte is in the set.
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  /// @brief Replaces the set by its complement over all 256 bytes.
  void invert() {
    for (auto& w : bits) w = ~w;
  }
  /// @brief Equality of the two bitmaps.
  bool operator==(const ByteSet&) const = default;
};

/// @brief A grammar expression node kind.
enum class ExprKind {
  empty,    ///< matches the empty string
  bytes,    ///< one byte from a ByteSet
  seq,      ///< the children one after another
  alt,      ///< any one of the children
  repeat,   ///< the child repeated min..max times (max = -1: unbounded)
  ref,      ///< a call of another rule (by id)
  members,  ///< a MemberSet's members in any order (a rule of Grammar::members_in_any_order)
};

/// @brief One expression node; nodes live in Grammar::exprs and refer to each other by index.
struct Expr {
  ExprKind kind = ExprKind::empty;  ///< what the node matches
  ByteSet set;                      ///< the bytes, for ExprKind::bytes
  std::vector<int> children;        ///< child expressions, for seq / alt / repeat (one child)
  int min = 0;                      ///< repeat: minimum count
  int max = -1;                     ///< repeat: maximum count, -1 for unbounded
  int rule = -1;                    ///< ref: the rule called
  int member_set = -1;              ///< members: index into Grammar::member_sets
};

/// @brief Listed members that may come in any order, each at most once, with additional
/// members anywhere between them. The parser tracks which listed members were written in a
/// bit mask kept in the rule's stack frame, so the automaton has one copy of each member (n
/// members: n branches, not a rule per subset of them).
struct MemberSet {
  /// Most listed members one set may hold: the bits of the frame's mask.
  static constexpr int kMaxMembers = 64;
  std::vector<int> members;          ///< the expression of each listed member
  std::uint64_t required = 0;        ///< bit i: members[i] must be written
  std::vector<std::uint64_t> needs;  ///< needs[i] bit j: members[i] written -> members[j] too
                                     ///< (empty: no member needs another)
  int extra = -1;        ///< the expression of one additional member, or -1 when none is allowed
  int separator = -1;    ///< the expression written between two members
  int min_members = 0;   ///< fewest listed members written (0: no bound)
  int max_members = -1;  ///< most listed members written (-1: no bound)
};

/// @brief A context-free grammar over bytes: named rules, each defined by one expression.
/// Built through the small constructors below (which return expression indices) by the regex,
/// GBNF and JSON-Schema front ends.
struct Grammar {
  /// @brief A named nonterminal; expr = -1 while declared but not yet defined.
  struct Rule {
    std::string name;  ///< name shown in errors (GBNF rule name or a generated one)
    int expr = -1;     ///< index of the defining expression in exprs
  };
  std::vector<Expr> exprs;             ///< expression pool
  std::vector<Rule> rules;             ///< rules; index = rule id
  std::vector<MemberSet> member_sets;  ///< the sets of ExprKind::members expressions
  int root = -1;                       ///< the start rule
  /// The expression of each single byte that literal() has written, by byte value (-1: none
  /// yet): expressions never change once made, so every literal shares them.
  std::array<int, 256> byte_exprs = [] {
    std::array<int, 256> none{};
    none.fill(-1);
    return none;
  }();

  /// @brief The empty string.
  int empty();
  /// @brief One byte from @p set.
  int bytes(const ByteSet& set);
  /// @brief One byte in [@p lo, @p hi].
  int byte_range(unsigned lo, unsigned hi);
  /// @brief The exact bytes of @p text (a seq of single bytes; empty text gives empty()).
  int literal(std::string_view text);
  /// @brief The concatenation of @p items.
  int seq(std::vector<int> items);
  /// @brief The union of @p items (no items: matches nothing).
  int alt(std::vector<int> items);
  /// @brief @p item repeated @p min to @p max times (@p max = -1: unbounded).
  /// @note A small repeat becomes copies of @p item in the automaton. One whose copies would
  /// exceed a few thousand nodes (maxLength 100000, a{1,1000}, an array of 500 objects) is
  /// written with O(log max) rules that double instead (exactly 2^k items, 0 to 2^k - 1
  /// items), so the parser's stacks count in binary and the grammar stays small.
  int repeat(int item, int min, int max);
  /// @brief A call of rule @p rule.
  int ref(int rule);
  /// @brief A call of a new rule, named @p name, whose expression is the members of @p set in
  /// any order. @throws inferlab::Error for more than MemberSet::kMaxMembers members.
  int members_in_any_order(std::string name, MemberSet set);
  /// @brief Declares a rule named @p name (defined later with define()); returns its id.
  int add_rule(std::string name);
  /// @brief Sets the expression of rule @p rule.
  void define(int rule, int expr) { rules[static_cast<std::size_t>(rule)].expr = expr; }
  /// @brief The id of the rule named @p name, or -1.
  int find_rule(std::string_view name) const;
  /// @brief Items of counted repeats written with the doubling rules while a rule they call
  /// was not defined yet (a GBNF rule defined further down), so whether they can match the
  /// empty string was not known; check_counted_repeats() decides once every rule is defined.
  std::vector<int> unchecked_counted_items;
  /// @brief Refuses a counted repeat whose item can match the empty string (the parser's
  /// closure would walk 2^k stacks through its doubling rules); repeat() rewrites the ones it
  /// can decide, this checks the rest. Called by the parser before it compiles the grammar.
  /// @throws inferlab::Error naming the problem.
  void check_counted_repeats() const;
};

/// @brief Appends to @p g an expression matching the UTF-8 encoding of exactly one code point
/// in [@p lo, @p hi] (surrogates D800-DFFF excluded, as UTF-8 forbids them): the code point
/// range is split into runs whose encodings are products of byte ranges (RE2's method).
int utf8_range(Grammar& g, std::uint32_t lo, std::uint32_t hi);

/// @brief Appends the UTF-8 encoding of code point @p cp to @p out.
void append_utf8(std::string& out, std::uint32_t cp);

}  // namespace inferlab
