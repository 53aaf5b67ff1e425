#pragma once
/// @file parser_impl.hpp
/// @brief The private parts of PushdownParser that its two source files share (internal to
/// common/src/constrain/): the tables of the pushdown engine (PushdownParser::Impl) and the
/// types they hold. parser_build.cpp compiles a grammar into them (the per-rule NFAs, trimmed
/// and checked); parser.cpp runs them (closures, stacks and states interned lazily).

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory_resource>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inferlab/constrain/parser.hpp"

namespace inferlab {

namespace parser_detail {

/// choose, more and finish are the empty edges of a member set (Grammar::MemberSet), guarded
/// by the mask of listed members written, which the set's stack frame carries: choose writes
/// member `bit` (not yet written, and the object can still be completed after it), more leads
/// to the separator when another member may follow, finish ends the members (the required ones
/// and those the written ones need are written, enough of them).
enum class EdgeKind : std::uint8_t { bytes, call, eps, choose, more, finish };

/// @brief An NFA edge.
struct Edge {
  EdgeKind kind;         ///< what the edge does
  std::uint8_t bit = 0;  ///< choose: the member written
  int arg;               ///< bytes: index into sets; call: rule id; choose/finish: member set
  int target;            ///< node reached (for a call: the return node)
};

/// A stack frame: the NFA node on top, the stack below it (-1: none), and the mask of listed
/// members written when the frame's rule is a member set (0 otherwise).
struct Frame {
  int node;            ///< the NFA node on top
  int parent;          ///< the stack below (-1: none)
  std::uint64_t mask;  ///< the members written (member sets), else 0
};

/// The guards of a member set's edges, from its Grammar::MemberSet.
struct MemberGuard {
  std::uint64_t required = 0;        ///< members every object must write
  std::vector<std::uint64_t> needs;  ///< (members) per member, the members it needs written
  int min_members = 0;               ///< the fewest members an object writes
  int max_members = -1;              ///< the most (-1: no bound)
  std::uint64_t live = 0;  ///< members whose branch survived trimming (can be written at all)
  int select = -1;         ///< the node whose choose edges pick the next member
  bool extra = false;      ///< additional members are allowed

  /// `written` and every member the written ones need, transitively, and the required ones.
  std::uint64_t closure(std::uint64_t written) const {
    std::uint64_t c = written | required;
    for (std::uint64_t prev = 0; prev != c;) {
      prev = c;
      for (std::size_t i = 0; i < needs.size(); ++i) {
        if (c >> i & 1) c |= needs[i];
      }
    }
    return c;
  }
  /// True when the members can end with `written`.
  bool can_finish(std::uint64_t written) const {
    return closure(written) == written && std::popcount(written) >= min_members;
  }
  /// True when some completion of `written` exists: its closure, grown greedily by live
  /// members (with their closures) up to min_members, within max_members. Greedy growth may
  /// miss a completion under a tight max with dependencies (a valid object refused, never an
  /// invalid one accepted).
  bool can_complete(std::uint64_t written) const {
    std::uint64_t c = closure(written);
    const auto fits = [&](std::uint64_t m) {
      return (m & ~live) == 0 && (max_members < 0 || std::popcount(m) <= max_members);
    };
    if (!fits(c)) return false;
    for (std::uint64_t rest = live & ~c; std::popcount(c) < min_members && rest != 0;) {
      const std::uint64_t bit = rest & (~rest + 1);
      rest &= rest - 1;
      if (const std::uint64_t grown = closure(c | bit); fits(grown)) c = grown;
    }
    return std::popcount(c) >= min_members;
  }
  /// True when member `bit` may be written next after `written`.
  bool can_choose(std::uint64_t written, int bit) const {
    const std::uint64_t b = std::uint64_t{1} << bit;
    return (written & b) == 0 && (max_members < 0 || std::popcount(written) < max_members) &&
           can_complete(written | b);
  }
  /// True when another member may follow `written`.
  bool can_continue(std::uint64_t written) const {
    if (extra) return true;
    for (std::uint64_t rest = live & ~written; rest != 0; rest &= rest - 1) {
      if (can_choose(written, std::countr_zero(rest))) return true;
    }
    return false;
  }
};

/// An index of ids by 64-bit key: open addressing with linear probing in a power-of-two table,
/// Fibonacci hashing. Interning is the engine's hottest lookup (every edge a new state follows
/// interns a stack, every new transition a state), and a node-based hash map spent its time in
/// allocation, pointer chasing and rehashing. The frames without a mask are keyed by
/// (node, parent) packed in 64 bits, which is exact; states by a hash of their stacks, so a
/// key match is confirmed by comparing the state itself (`same`).
class StackIndex {
 public:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  ///< no (node, parent + 1) packs to it

  /// Room for n keys without growing.
  void reserve(std::size_t n) {
    if (2 * n > slots_.size()) rehash(std::bit_ceil(2 * n));
  }
  /// The value of `key`, inserting `value` when absent; second = inserted.
  std::pair<int, bool> try_emplace(std::uint64_t key, int value) {
    return try_emplace(key, value, [](int) { return true; });
  }
  /// The same, where a value stored under `key` is the one sought only when same(value) holds
  /// (keys that are hashes may collide). `key` must not be kEmpty.
  template <class Same>
  std::pair<int, bool> try_emplace(std::uint64_t key, int value, Same same) {
    if (2 * (size_ + 1) > slots_.size()) rehash(std::max<std::size_t>(64, 2 * slots_.size()));
    for (std::size_t i = slot(key);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& e = slots_[i];
      if (e.key == key && same(e.value)) return {e.value, false};
      if (e.key == kEmpty) {
        e = Slot{key, value};
        ++size_;
        return {value, true};
      }
    }
  }

 private:
  struct Slot {  // key and value side by side: a probe touches one cache line
    std::uint64_t key = kEmpty;
    int value = 0;
  };
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  int shift_ = 64;
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void rehash(std::size_t capacity) {
    std::vector<Slot> old(capacity);
    slots_.swap(old);
    shift_ = 64 - std::countr_zero(capacity);
    for (const Slot& e : old) {
      if (e.key == kEmpty) continue;
      std::size_t i = slot(e.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & (capacity - 1);
      slots_[i] = e;
    }
  }
};

}  // namespace parser_detail

/// @brief The compiled grammar (NFAs, byte classes) and the tables the lazy DFA fills.
struct PushdownParser::Impl {
  using Edge = parser_detail::Edge;                ///< parser_detail::Edge
  using EdgeKind = parser_detail::EdgeKind;        ///< parser_detail::EdgeKind
  using Frame = parser_detail::Frame;              ///< parser_detail::Frame
  using MemberGuard = parser_detail::MemberGuard;  ///< parser_detail::MemberGuard
  using StackIndex = parser_detail::StackIndex;    ///< parser_detail::StackIndex

  ParserLimits limits;        ///< the compile-time and run-time size limits
  std::vector<ByteSet> sets;  ///< the distinct byte sets of the grammar, by index
  /// The edge lists, one per node, take their memory from one pool released with the parser:
  /// a grammar has thousands of nodes, each with a short list of its own, and a heap
  /// allocation per list and per growth was a large part of the time to the first mask.
  std::pmr::monotonic_buffer_resource edge_memory;
  std::vector<std::pmr::vector<Edge>> edges;  ///< per node
  std::vector<int> node_rule;                 ///< by node: its rule
  std::vector<int> rule_start;                ///< by rule: its start node
  std::vector<int> rule_end;                  ///< by rule: its end node
  std::vector<std::string> rule_name;         ///< by rule: its name
  /// Bytes that every byte set treats alike share a class: a transition computed for one byte
  /// of a class holds for all of them (the string-character bytes of JSON are one class).
  std::array<std::uint8_t, 256> byte_class{};
  int num_classes = 0;  ///< number of byte classes

  std::vector<MemberGuard> guards;  ///< by member set
  std::vector<int> guard_start;     ///< by member set: its rule's start node

  /// Hash-consed stacks: id -> frame. Frames without a mask (all but member sets') are found
  /// by (node, parent) in stack_index, the others in masked_index.
  std::vector<Frame> stacks;
  StackIndex stack_index;  ///< the frames without a mask, by (node, parent + 1)
  /// @brief The hash of a frame with a mask.
  struct FrameHash {
    /// The hash of `f`.
    std::size_t operator()(const Frame& f) const {
      return std::hash<std::uint64_t>()(f.mask * 0x9E3779B97F4A7C15ull ^
                                        (static_cast<std::uint64_t>(f.node) << 32) ^
                                        static_cast<std::uint32_t>(f.parent));
    }
  };
  /// @brief The equality of two frames with a mask.
  struct FrameEq {
    /// True when `a` and `b` are the same frame.
    bool operator()(const Frame& a, const Frame& b) const {
      return a.node == b.node && a.parent == b.parent && a.mask == b.mask;
    }
  };
  std::unordered_map<Frame, int, FrameHash, FrameEq> masked_index;  ///< the frames with a mask
  /// The parser states by a hash of their stacks and accept flag (PushdownParser::intern_state).
  StackIndex state_index;
  std::vector<std::uint32_t> stamp;  ///< closure's visited marks, by stack id
  std::uint32_t generation = 0;      ///< the stamp of the closure in progress

  // Build time (parser_build.cpp).

  /// A new node of rule `rule`; throws past limits.max_nodes.
  int new_node(int rule);

  /// By expression: the index of its byte set in `sets` (-1: not looked up yet). An expression
  /// is built once per use (a literal's bytes are shared by every literal), its set found once.
  std::vector<int> expr_set;
  StackIndex set_lookup;  ///< the sets by a hash of their bytes, for set_index
  /// The index of byte set `s` in `sets`, added when new.
  int set_index(const ByteSet& s);

  /// Thompson construction: adds nodes and edges so that the paths from `from` to `to` spell
  /// exactly the strings of expression `e`. Loops always go through fresh nodes.
  void build(const Grammar& g, int e, int from, int to, int rule, int depth);

  /// A member set (the whole expression of its rule): from `select`, a choose edge into each
  /// member and an empty edge into the additional member, both ending at `after`; from there
  /// more, then a separator back to `select`, or finish to the rule's end (also from the
  /// start: no member at all).
  void build_members(const Grammar& g, int set, int from, int to, int rule, int depth);

  /// Removes the nodes that cannot reach their rule's end (parser_build.cpp says how).
  void trim();
  /// One pass of trim() over the edges.
  void trim_edges();
  /// Fills byte_class and num_classes from `sets`.
  void compute_byte_classes();
  /// Throws for a rule that can call itself before reading a byte.
  void check_left_recursion();

  /// tail[n]: node n reads nothing and calls nothing before its rule ends (it is its rule's
  /// end, or has only empty edges into such nodes). A call that returns to such a node is a
  /// tail call: the callee may return straight to the caller's return address, as a compiler
  /// turns a call in tail position into a jump. The language is unchanged (the skipped frame
  /// would only have been popped at once), but states that differ only in such frames become
  /// one state: a key that leaves the trie of listed names at any letter continues in one free
  /// tail (JsonSchema's other_key calls one tail rule last), not one copy per letter, and the
  /// states of that tail and their masks are built once.
  std::vector<std::uint8_t> tail;
  /// Fills `tail`.
  void compute_tail_nodes();

  // Run time (parser.cpp).

  /// The id of the stack whose top frame is (node, mask) over stack `parent` (-1: none),
  /// interned; throws past limits.max_interned_stacks.
  int intern_stack(int node, int parent, std::uint64_t mask = 0);

  /// Follows every edge that reads no byte from the seed stacks: empty edges, calls (push the
  /// callee's start over the return address) and rule ends (pop). Keeps the stacks whose top
  /// can read a byte; sets accept when the start rule can end.
  void closure(std::vector<int>& work, PushdownParser::RawState& out);
  /// One byte from `from`, uncached: the oracle's definition.
  PushdownParser::RawState step(const PushdownParser::RawState& from, unsigned char byte);

  /// The closure of one stack, memoized (by stack id) for the DFA's transitions: a state's
  /// step is the union of the closures of the stacks its byte edges push, and closures are
  /// pure reachability, so the union of the parts is the closure of the whole. Many states
  /// share stacks (every state inside the same string shares its character stacks), so most
  /// closures are found here. step() stays uncached: it is the oracle's definition.
  struct Closure {
    std::size_t first = 0;   ///< its stacks: closure_stacks[first .. first + size)
    std::uint32_t size = 0;  ///< how many
    bool accept = false;     ///< the closure may end the input
    bool done = false;       ///< computed
  };
  std::vector<Closure> closure_memo;  ///< by stack id
  /// Every memoized closure's stacks, one after another: a new stack's closure is an append
  /// here, not an allocation of its own (a new state of a long counted string pushes a hundred
  /// new stacks).
  std::vector<int> closure_stacks;
  std::vector<int> closure_work;         ///< closure_of's buffers, reused
  PushdownParser::RawState closure_out;  ///< closure_of's buffer, reused
  /// The memoized closure of stack `stack`.
  const Closure& closure_of(int stack);
  /// step_memo's buffers, reused: a new transition allocates only when it makes a new state.
  std::vector<int> pushed;           ///< the stacks the byte edges push
  PushdownParser::RawState stepped;  ///< the state reached
  /// The state after `byte` from the stacks `from`, by memoized closures (valid until the
  /// next call).
  const PushdownParser::RawState& step_memo(const std::vector<int>& from, unsigned char byte);

  /// Per byte class of a state with stacks `from`: same[c] = the smallest class c' that leads
  /// where c does. A step reads a byte only through the byte sets on the edges of the stacks'
  /// top nodes, so two classes that each of those sets holds or lacks alike push the same
  /// stacks: the same state, computed once. Inside a string, a grammar whose patterns split
  /// the letters and digits into many classes has one transition per string position for all
  /// of them, and the continuation bytes of a UTF-8 character are one.
  std::vector<std::array<std::uint64_t, 4>> set_classes;  ///< by set: the classes it holds
  std::vector<std::uint8_t> set_classes_known;            ///< by set
  std::vector<std::uint32_t> node_seen;                   ///< equivalent_classes' marks, by node
  std::uint32_t node_generation = 0;  ///< the stamp of the equivalent_classes() call in progress
  /// The byte sets on the top nodes' edges, and per class its signature (bit i: top_sets[i]
  /// holds the class); the groups' table by signature: 512 slots, twice the most classes.
  std::vector<int> top_sets;
  std::vector<std::uint64_t> signature;          ///< by class: its signature
  std::array<std::uint64_t, 512> group_key{};    ///< by slot: a signature
  std::array<std::uint8_t, 512> group_first{};   ///< by slot: the first class with that signature
  std::array<std::uint32_t, 512> group_stamp{};  ///< by slot: the call that filled it
  std::uint32_t group_generation = 0;            ///< the stamp of the call in progress
  /// Fills `same` for the state with stacks `from`.
  void equivalent_classes(const std::vector<int>& from, std::vector<std::uint8_t>& same);
};

}  // namespace inferlab
