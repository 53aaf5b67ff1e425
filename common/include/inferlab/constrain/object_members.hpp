#pragma once
/// @file object_members.hpp
/// @brief The members of a JSON object as a grammar: listed members in any order (a member
/// set whose written members the parser tracks in a bit mask) or in a fixed order,
/// additional members between them, and the keys that are none of the listed names. JSON
/// Schema's properties / required / additionalProperties / dependentRequired compile to these
/// (json_schema_spec.hpp).
///
/// The functions build the members between the braces; the caller adds the braces and the
/// whitespace inside them.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "inferlab/constrain/grammar.hpp"

namespace inferlab {

/// @brief Appends the members of an object in any order: each listed member at most once,
/// the required ones at least once, additional members anywhere between them; returns its
/// expression.
/// @param g the grammar the expressions and rules are added to
/// @param members the expression of each listed member (`"key": value`)
/// @param optional optional[i] true: members[i] may be left out
/// @param extra the expression of one additional member, or -1 when none is allowed
/// @param separator the expression written between two members
/// @param needs needs[i] bit j set: when members[i] is written, members[j] must be too
///        (dependentRequired); empty when no member needs another
/// @param min_members fewest listed members (minProperties of an object without additional
///        members; 0: no bound)
/// @param max_members most listed members (maxProperties likewise; -1: no bound)
/// @return the index of the expression in g.exprs (which may match no member at all when
///         none is required)
/// @note One branch per listed member (Grammar::members_in_any_order): the parser keeps the
/// set of members written as a bit mask in the stack frame, so the automaton grows linearly
/// with n, and only the subsets an instance actually writes become parser states. At most
/// MemberSet::kMaxMembers members. JSON Schema does not order properties, so this is the exact
/// language (under a tight max_members with dependencies, see parser_impl.hpp's MemberGuard, a
/// valid object may be refused, never an invalid one accepted).
int members_in_any_order(Grammar& g, const std::vector<int>& members,
                         const std::vector<bool>& optional, int extra, int separator,
                         const std::vector<std::uint64_t>& needs = {}, int min_members = 0,
                         int max_members = -1);

/// @brief Appends the members of an object in the listed order (required ones present,
/// optional ones optional), then any additional members; returns its expression.
/// @param g the grammar the expressions are added to
/// @param members the expression of each listed member (`"key": value`)
/// @param optional optional[i] true: members[i] may be left out
/// @param extra the expression of one additional member, or -1 when none is allowed
/// @param separator makes a new expression written between two members (called once per
///        place a separator is written)
/// @return the index of the expression in g.exprs
/// @note A valid instance whose keys come in another order is rejected: for objects with too
/// many properties to track which were written, the grammar is a subset of the schema, never
/// a superset.
int members_in_order(Grammar& g, const std::vector<int>& members, const std::vector<bool>& optional,
                     int extra, const std::function<int()>& separator);

/// @brief The rules of a key after it left the names' trie, which do not depend on the names:
/// made by the first key_other_than that is given this object, called by the others of the
/// same grammar (one automaton, and one set of parser states, for every free key).
struct FreeKeyRules {
  int tail = -1;       ///< any characters, then the closing quote (-1: not made yet)
  int other = -1;      ///< one character that is not plain ASCII, then the tail (-1: not made yet)
  int non_ascii = -1;  ///< one character above ASCII, in UTF-8 (made with tail)
  int escaped = -1;    ///< one character JSON must escape, in json.dumps's escape (made with tail)
};

/// @brief Appends a key, with its quotes, that is none of @p names: a trie of the names that
/// the key leaves at its first differing character, spelled canonically (json.dumps's single
/// spelling of each character) so that no escape can disguise a listed name; returns its
/// expression.
/// @param g the grammar the expressions and rules are added to
/// @param names the listed names the key must differ from
/// @param shared the rules shared by the free keys of @p g (nullptr: this key makes its own)
/// @return the index of the expression in g.exprs
int key_other_than(Grammar& g, const std::vector<std::string>& names,
                   FreeKeyRules* shared = nullptr);

}  // namespace inferlab
