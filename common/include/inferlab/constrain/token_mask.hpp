#pragma once
/// @file token_mask.hpp
/// @brief Which tokens may come next: the tokenizer's pieces as byte strings in a trie, walked
/// together with the parser so that a rejected prefix prunes its whole subtree; masks are
/// cached per parser state, and per grammar position (a stack's top frame, whatever lies below
/// it), so that a state seen in a new context costs a few bitset ORs. A brute-force oracle
/// (every token, byte by byte, no cache) is the specification the fast path is tested against.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "inferlab/constrain/parser.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/model/tokenizer.hpp"

namespace inferlab {

/// @brief The bytes each token appends to the text: `<0xXX>` pieces are that byte, other
/// pieces their text; control tokens (BOS, EOS, `<|im_end|>`), the unknown piece and unused
/// slots append nothing and are never allowed as text (the end token is allowed separately,
/// where the constraint can end). Index = token id.
std::vector<std::string> token_byte_strings(const Tokenizer& tokenizer);

/// @brief A bitset over the vocabulary: bit t set = token t allowed.
struct TokenMask {
  std::vector<std::uint64_t> words;  ///< (ceil(V / 64)) bit t of word t/64
  /// @brief True when token @p t is allowed.
  bool allowed(int t) const { return (words[static_cast<std::size_t>(t) >> 6] >> (t & 63)) & 1; }
  /// @brief Allows token @p t.
  void allow(int t) { words[static_cast<std::size_t>(t) >> 6] |= std::uint64_t{1} << (t & 63); }
  /// @brief Number of allowed tokens.
  int count() const;
  /// @brief Bitwise equality.
  bool operator==(const TokenMask&) const = default;
};

/// @brief The vocabulary's byte strings in a trie (children sorted by byte, stored flat).
class TokenTrie {
 public:
  /// @brief Builds the trie of @p tokens (index = token id; empty strings are left out).
  explicit TokenTrie(const std::vector<std::string>& tokens);
  /// @brief Number of tokens (V).
  int vocab_size() const { return vocab_size_; }
  /// @brief Number of trie nodes, root included.
  std::size_t num_nodes() const { return first_child_.size() - 1; }

  /// @brief For a set W of characters that lead a parser state back to itself (a string's
  /// ordinary characters): per token, the first position from which the rest of its bytes are
  /// whole characters of W (a token below node n from whose depth on that holds is allowed
  /// without a walk), and per trie node whether its subtree holds a token that does not end
  /// that way (else it is never walked). W is a set L of single bytes and, when utf8 is set,
  /// also every well-formed multi-byte UTF-8 character: without it, every token with a
  /// non-ASCII character (a fifth of the Llama 2 vocabulary) would be walked byte by byte
  /// inside a string. The tables depend only on the vocabulary and W, so they are cached here
  /// and shared by every grammar: the vocabulary's ahead-of-time preprocessing.
  struct LoopTables {
    ByteSet loop;                         ///< L (only ASCII bytes when utf8)
    bool utf8 = false;                    ///< W also holds every multi-byte UTF-8 character
    std::vector<std::uint16_t> last_out;  ///< (V) by position in the sorted token order
    std::vector<std::uint8_t> must_walk;  ///< (trie nodes)
    /// (trie nodes) the UTF-8 decoder state after the node's byte (0: at a character
    /// boundary, else inside a multi-byte character), plus kContinues when that byte
    /// continues the run of W characters of its parent (else the run restarts there).
    std::vector<std::uint8_t> phase;
    static constexpr std::uint8_t kContinues = 0x80;  ///< flag in phase
    /// (ceil(V / 64)) bit t set: token t starts with an ASCII byte and the rest of its bytes
    /// are whole W characters (last_out <= 1): the tokens a state allows wholesale when its
    /// ASCII bytes lead into a state with these tables (the first character of a key).
    std::vector<std::uint64_t> after_first;
    /// (ceil(V / 64)) with utf8: bit t set when token t is entirely W characters and its first
    /// one is multi-byte (last_out = 0), the same tokens for a first character of 2-4 bytes.
    std::vector<std::uint64_t> multibyte_first;
  };
  /// @brief The tables of @p loop (and of every multi-byte character when @p utf8), built on
  /// first use (a pass over the trie) and cached.
  /// @note Not thread-safe: the cache is filled lazily.
  const LoopTables& loop_tables(const ByteSet& loop, bool utf8 = false) const;
  /// @brief The tables of @p loop and @p utf8 when they were built already, else nullptr.
  const LoopTables* find_loop_tables(const ByteSet& loop, bool utf8 = false) const;
  /// @brief The loop set of the inside of a JSON string: printable ASCII but `"` and `\`;
  /// with utf8 = true its tables cover the whole JSON-string character set. Precomputing them
  /// takes the common case out of the first mask.
  static ByteSet json_string_loop();

 private:
  friend class MaskComputer;
  int vocab_size_ = 0;
  // Node n's children are child_byte_/child_node_[first_child_[n] .. first_child_[n+1]); the
  // tokens ending at n are token_ids_[first_token_[n] .. first_token_[n+1]).
  std::vector<std::uint32_t> first_child_, first_token_;
  std::vector<std::uint8_t> child_byte_;
  std::vector<std::uint32_t> child_node_;
  std::vector<int> token_ids_;
  // The tokens sorted by bytes: node n's subtree holds exactly sorted_[lo_[n] .. hi_[n]).
  std::vector<int> sorted_;
  std::vector<std::uint32_t> lo_, hi_;
  std::vector<std::uint16_t> depth_;
  int max_depth_ = 0;  // the deepest node's depth: the longest token's bytes
  std::vector<std::uint32_t> node_of_sorted_;  // (V) the node where sorted_[i] ends
  mutable std::map<std::pair<std::array<std::uint64_t, 4>, bool>, std::unique_ptr<LoopTables>>
      loop_cache_;
};

/// @brief Computes token masks for the states of one parser.
class MaskComputer {
 public:
  /// @brief A state with at least this many ASCII loop bytes (see loop_tables_for) uses the
  /// loop tables.
  static constexpr int kMinLoopBytes = 16;
  /// @brief At most this many states may share one set of loop tables (a string with a
  /// minimum length counts its characters up to it in states).
  static constexpr std::size_t kMaxLoopStates = 16;
  // A longer chain of states (a string with a large maxLength) gets the tables of its first
  // state alone when every string of W characters as long as the longest token stays live
  // from it (chain_stays_live).
  /// @brief ... and only below trie nodes with at least this many tokens in their subtree.
  static constexpr std::uint32_t kMinLoopSubtree = 64;
  /// @brief A state with at most this many stacks, one of them called by a rule below it,
  /// gets its mask from its stacks' frame masks (see mask()).
  static constexpr std::size_t kMaxFrames = 64;
  /// @brief ... and whose frames have at most this many context-dependent tokens in all (they
  /// are checked by walking, from the whole state, the subtrees below the prefixes where a
  /// frame's rule ends).
  static constexpr std::size_t kMaxContextDependent = 512;
  /// @brief @p parser, @p trie and @p token_bytes must outlive this object. @p eos_token is
  /// allowed exactly where the parser accepts; @p token_bytes is the trie's input (kept for the
  /// oracle).
  MaskComputer(PushdownParser& parser, const TokenTrie& trie,
               const std::vector<std::string>& token_bytes, int eos_token);

  /// @brief The allowed tokens after the text that led to @p state: walks the trie, stepping
  /// the parser one byte per edge and skipping every subtree whose prefix is dead. Cached per
  /// state, so a state seen before costs a lookup.
  ///
  /// A state inside a called rule (a string value, a member of an object) recurs under ever
  /// new stacks below it: the same position in an object with other members written before
  /// it is a new parser state. Its mask is then built from per-position parts, XGrammar's
  /// context-independent tokens: a token is allowed from a set of stacks exactly when it is
  /// allowed from one of them, and from one stack, a token that is still alive inside the top
  /// frame's rule when its bytes end is allowed whatever lies below (the same path exists), one
  /// that dies before that rule ends is rejected whatever lies below; only a token that ends
  /// the top rule on the way depends on the frames below. The first two sets depend on the top
  /// frame alone and are computed once per top frame (a walk from
  /// PushdownParser::top_frame_state, cached); the state's mask is the OR of its stacks'
  /// allowed sets plus those of the few context-dependent tokens that the full state accepts,
  /// found by walking from it only the subtrees below the prefixes where a frame's rule ends
  /// (a closing quote, a space). The result is the walk's mask, bit for bit.
  /// @note Cost: one cached transition per trie node visited (at most the trie's size); with
  /// frame masks, one OR of V bits per stack plus the walks below the frames' rule ends.
  const TokenMask& mask(int state);
  /// @brief Number of top-frame masks computed so far (each is one trie walk).
  std::size_t num_frame_masks() const { return num_frame_masks_; }
  /// @brief The specification: for every token, feed its bytes to the parser one by one with
  /// no cache at all (PushdownParser::step_uncached); allowed when the result is not dead.
  /// @note Cost: V x token length closures; for tests and the bench only.
  TokenMask oracle_mask(int state);
  /// @brief Whether the mask of @p state is already cached.
  bool cached(int state) const;
  /// @brief The token allowed where the parser accepts (the constructor's `eos_token`).
  int end_token() const { return eos_; }

 private:
  PushdownParser* parser_;
  const TokenTrie* trie_;
  const std::vector<std::string>* token_bytes_;
  int eos_;
  std::vector<std::unique_ptr<TokenMask>> cache_;            // by state id
  // The mask parts of one top frame: the tokens allowed whatever lies below it, and the ones
  // that end its rule on the way, which depend on what lies below: those are the tokens below
  // the trie nodes in `ends` (the outermost prefixes that end the rule, in trie order) that
  // `allowed` leaves out.
  struct FrameMask {
    TokenMask allowed;
    std::vector<std::uint32_t> ends;
    std::size_t num_context_dependent = 0;
  };
  std::vector<std::unique_ptr<FrameMask>> frame_cache_;  // by PushdownParser::top_frame_state
  std::size_t num_frame_masks_ = 0;
  std::vector<int> frames_;  // combine_frames' buffer, reused
  // While a frame mask is walked: its list of the trie nodes whose prefix ends the frame's
  // rule (set: a walk from a top_frame_state; nullptr: an ordinary walk).
  std::vector<std::uint32_t>* frame_ends_ = nullptr;
  std::vector<std::uint32_t> end_nodes_;  // combine_frames' buffer, reused
  const FrameMask& frame_mask(int frame_state);
  bool combine_frames(int state, TokenMask& out);
  bool enter(std::uint32_t child, int next, TokenMask& out);
  std::vector<const TokenTrie::LoopTables*> loop_of_state_;  // by state; nullptr: no loop
  std::vector<std::uint8_t> loop_known_;                     // by state: loop_of_state_ set
  const TokenTrie::LoopTables* loop_tables_for(int state, std::uint32_t node);
  bool utf8_chars_close(int state, std::vector<int>& closed);
  bool utf8_chars_live(int state, std::vector<int>& ends);
  struct Utf8Ends {  // utf8_chars_close's answer for one state
    bool known = false;
    bool live = false;
    std::vector<int> ends;
  };
  std::vector<Utf8Ends> utf8_ends_;  // by state
  bool chain_stays_live(int state, const ByteSet& loop, bool& utf8);
  // One state's step along a chain of W characters, for `loop`: the one successor every loop
  // byte leads to (kDead: none, or not one), and whether every multi-byte character leads there.
  struct ChainStep {
    bool known = false;
    ByteSet loop;
    int successor = PushdownParser::kDead;
    bool utf8 = false;
  };
  std::vector<ChainStep> chain_;  // by state
  std::vector<int> ends_;         // chain_stays_live's buffer, reused
  int max_token_bytes_ = 0;  // the longest token's bytes (the trie's depth)
  void walk(std::uint32_t node, int state, TokenMask& out);
  void walk_loop(std::uint32_t node, int state, const TokenTrie::LoopTables& t, TokenMask& out);
  bool walk_root_into_loop(int state, TokenMask& out);
  std::vector<int> root_next_, root_ends_;  // walk_root_into_loop's buffers, reused
  std::vector<std::uint64_t> scratch_;
};

/// @brief Sets the logit of every token @p mask disallows to -inf (in place), so that any
/// sampler gives them probability 0 after softmax. @p logits has V entries.
void apply_token_mask(std::span<float> logits, const TokenMask& mask);

}  // namespace inferlab
