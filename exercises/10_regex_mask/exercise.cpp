// Exercise 10, the learner's file: a regex subset -> DFA, and a token mask by trie walk.
// The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex10_regex_mask_test
//   ./build-exercises/bin/ex10_regex_mask_test

#include "exercise.hpp"

#include "inferlab/error.hpp"

namespace inferlab::ex10 {

Dfa compile_dfa(std::string_view pattern) {
  // TODO(exercise): parse the pattern by recursive descent (alternation > concatenation >
  //                 postfix > atom) into a Thompson NFA: states with byte-set edges and
  //                 epsilon edges, one start and one accepting state per fragment.
  // TODO(exercise): subset construction: the DFA state 0 is the epsilon-closure of the NFA
  //                 start; for each DFA state and byte, the closure of the states reached.
  //                 An empty set becomes -1. Throw inferlab::Error on a syntax error.
  (void)pattern;
  Dfa dfa;
  dfa.next.push_back({});
  dfa.next[0].fill(-1);
  dfa.accepting.push_back(false);
  return dfa;
}

std::vector<bool> allowed_tokens(const Dfa& dfa, int state, const std::vector<std::string>& tokens) {
  // TODO(exercise): mark the DFA states that can reach an accepting state (live).
  // TODO(exercise): build a trie of the tokens' bytes (children by byte, token ids per node).
  // TODO(exercise): walk it from (root, state): for a child reached by byte b, the next state is
  //                 dfa.next[state][b]; skip the subtree when it is -1 or not live, else allow
  //                 the tokens ending at the child and walk on.
  (void)dfa;
  (void)state;
  return std::vector<bool>(tokens.size(), false);
}

}  // namespace inferlab::ex10
