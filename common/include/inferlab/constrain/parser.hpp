#pragma once
/// @file parser.hpp
/// @brief The byte-level engine every constraint runs on: a pushdown automaton over the
/// grammar's rules, explored as a set of stacks, whose sets are interned so that they become
/// the states of a lazily built DFA.
///
/// Each rule becomes a small NFA (Thompson construction) whose edges read a byte set, call
/// another rule, or are empty. A parser configuration is a stack of NFA nodes: the top is where
/// the current rule is, the others are return addresses (a call in tail position, whose return
/// node would only end its rule, pushes none). Stacks are hash-consed (equal stacks
/// share one id), and a parser state is the sorted set of stacks that can read a byte next,
/// plus whether the input may end here. Because nothing in a state mentions positions, the same
/// state recurs whenever the text is in the same situation (inside the same string field, say),
/// so transitions and token masks computed once are reused: this is what makes masks cheap.

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "inferlab/constrain/grammar.hpp"

namespace inferlab {

/// @brief Size limits that keep a hostile grammar from exhausting memory or time.
struct ParserLimits {
  int max_nodes = 4'000'000;             ///< NFA nodes after expanding counted repetitions
  int max_stacks_per_state = 50'000;     ///< stacks in one state (ambiguity explosion guard)
  int max_interned_stacks = 20'000'000;  ///< distinct stacks over the parser's life
};

/// @brief A compiled grammar and the lazily built DFA over its parser states.
///
/// Compiling checks the grammar: every rule must be defined, no rule may be left-recursive
/// (directly or through rules that can match the empty string), and rules that can match no
/// string at all are removed, so that every live state has a way to reach the end: a state is
/// non-dead exactly when its input is a viable prefix. A grammar whose start rule matches
/// nothing is an error ("unsatisfiable").
class PushdownParser {
 public:
  /// @brief The id step() returns for a byte that no continuation accepts.
  static constexpr int kDead = -1;

  /// @brief Compiles @p grammar. @throws inferlab::Error naming the rule for an undefined
  /// rule, left recursion, an unsatisfiable grammar, or a grammar above @p limits.
  explicit PushdownParser(const Grammar& grammar, const ParserLimits& limits = {});
  ~PushdownParser();
  PushdownParser(const PushdownParser&) = delete;
  PushdownParser& operator=(const PushdownParser&) = delete;

  /// @brief The state before any byte.
  int initial_state() const { return initial_; }
  /// @brief The state after reading @p byte in @p state (cached), or kDead.
  int step(int state, unsigned char byte) {
    // The fast path is two loads: the mask walk calls this once per trie node.
    if (const int* row = states_[static_cast<std::size_t>(state)].next.get()) {
      if (const int n = row[byte_class_[byte]]; n != -2) return n;
    }
    return step_slow(state, byte);
  }
  /// @brief The state after reading all of @p bytes from @p state, or kDead.
  int advance(int state, std::string_view bytes);
  /// @brief True when the input read so far is a complete sentence (EOS may come now).
  bool accepts(int state) const {
    return state != kDead && states_[static_cast<std::size_t>(state)].accept;
  }
  /// @brief True when @p text, read from the initial state, is a complete sentence.
  bool matches(std::string_view text) { return accepts(advance(initial_state(), text)); }
  /// @brief True when @p state can read at least one more byte.
  bool can_continue(int state) const {
    return state != kDead && !states_[static_cast<std::size_t>(state)].stacks.empty();
  }

  /// @brief A state as its raw parts, for the brute-force oracle: the stack ids and the
  /// accept flag. The oracle steps these with step_uncached(), which uses no DFA cache.
  struct RawState {
    std::vector<int> stacks;  ///< sorted ids of the stacks that can read a byte
    bool accept = false;      ///< the input may end here
  };
  /// @brief The raw parts of @p state.
  RawState raw(int state) const;
  /// @brief One byte from a raw state, recomputing the closure (no transition cache, no state
  /// interning): the definition that step() caches. Empty stacks and !accept = dead.
  RawState step_uncached(const RawState& from, unsigned char byte);

  /// @brief The sorted ids of the stacks of @p state (a live state, not kDead) that can read
  /// a byte: the parts whose masks token_mask.hpp combines.
  const std::vector<int>& stacks(int state) const {
    return states_[static_cast<std::size_t>(state)].stacks;
  }
  /// @brief True when stack @p stack has frames below its top (its top rule was called).
  bool has_caller(int stack) const;
  /// @brief The state whose only stack is the top frame of stack @p stack (its node and
  /// member mask) with nothing below it: there the end of the top rule is the end of the
  /// input. What a byte string does from @p stack before its top rule ends, it does from this
  /// state, which is the same for every stack with that top frame, whatever lies below.
  /// @note @p stack must be one of a state's stacks (its top reads a byte).
  int top_frame_state(int stack);

  /// @brief Number of parser states built so far (grows as the DFA is explored).
  std::size_t num_states() const { return states_.size(); }
  /// @brief Number of NFA nodes of the compiled grammar.
  int num_nodes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  struct State {
    std::vector<int> stacks;
    bool accept = false;
    std::unique_ptr<int[]> next;  // (byte classes) transitions, -2 = not computed yet
    // (byte classes, once two classes were stepped) the smallest class whose bytes this
    // state's stacks cannot tell from the class's own (Impl::equivalent_classes): the two
    // share one computed transition.
    std::vector<std::uint8_t> same;
  };
  std::vector<State> states_;
  // Bytes that every byte set of the grammar treats alike share a class and one transition:
  // a row per class, not per byte, is four to ten times smaller (a JSON Schema has 10-60
  // classes), so the rows of the states a walk visits stay in cache, and a new state costs
  // less memory to map.
  std::array<std::uint8_t, 256> byte_class_{};
  int num_classes_ = 0;
  int initial_ = kDead;
  int intern_state(const RawState& raw);
  int step_slow(int state, unsigned char byte);
};

}  // namespace inferlab
