#pragma once
/// @file exercises/10_regex_mask/exercise.hpp
/// @brief Exercise 10: a regex token mask for a small vocabulary. Compile a regex subset to a
/// DFA over bytes, then compute which tokens may come next from a DFA state by walking a trie
/// of the tokens' bytes, pruning every subtree whose prefix the DFA rejects.
///
/// The regex subset: literal bytes, `.` (any byte), classes `[abc]` and `[a-z]` (no negation),
/// groups `( )`, alternation `|`, and the postfix operators `*`, `+`, `?`. The whole input must
/// match (anchoring implied). No escapes.

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace inferlab::ex10 {

/// @brief A deterministic automaton over bytes. State 0 is the start.
struct Dfa {
  std::vector<std::array<int, 256>> next;  ///< (states, 256) next state, or -1 (no way on)
  std::vector<bool> accepting;             ///< (states) the input may end here
  /// Transitions read through step() so far: the cost of a mask, which the test measures.
  mutable std::size_t steps_taken = 0;

  /// @brief The state after reading @p byte in @p state (-1: no way on); counts one step.
  int step(int state, unsigned char byte) const {
    ++steps_taken;
    return next[static_cast<std::size_t>(state)][byte];
  }
};

/// @brief Compiles @p pattern (the subset above) into a DFA that accepts exactly the strings
/// the pattern matches. Every state must be reachable from state 0; a state from which nothing
/// more can match may be represented by -1.
/// @throws inferlab::Error on a syntax error (unbalanced parenthesis, a dangling operator,
/// an unterminated class).
Dfa compile_dfa(std::string_view pattern);

/// @brief The allowed tokens after the input that led to @p state: token t is allowed when it
/// is not empty and reading its bytes from @p state keeps the DFA in states from which an
/// accepting state is still reachable (live states; a state that is not -1 may still be dead
/// in that sense). Compute it by building a trie of @p tokens and walking it from @p state,
/// never entering a subtree whose prefix is already rejected: read every transition of the walk
/// through Dfa::step(), at most once per trie edge (the test counts the steps). Finding the
/// live states may read `next` directly: it does not depend on the tokens.
/// @param tokens (V) each token's bytes
/// @return (V) allowed flags
std::vector<bool> allowed_tokens(const Dfa& dfa, int state, const std::vector<std::string>& tokens);

}  // namespace inferlab::ex10
