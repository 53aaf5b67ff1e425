// The pushdown engine: grammar -> per-rule NFAs (Thompson), trimmed to live nodes, checked for
// left recursion; then parser states (sets of hash-consed stacks) built lazily as a DFA.
#include "inferlab/constrain/parser.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

namespace {

constexpr std::size_t kReservedStacks = 8192, kReservedStates = 1024;
constexpr std::size_t kReservedMaskedStacks = 256;

// choose, more and finish are the empty edges of a member set (Grammar::MemberSet), guarded
// by the mask of listed members written, which the set's stack frame carries: choose writes
// member `bit` (not yet written, and the object can still be completed after it), more leads
// to the separator when another member may follow, finish ends the members (the required ones
// and those the written ones need are written, enough of them).
enum class EdgeKind : std::uint8_t { bytes, call, eps, choose, more, finish };

struct Edge {
  EdgeKind kind;
  std::uint8_t bit = 0;  // choose: the member written
  int arg;               // bytes: index into sets; call: rule id; choose/finish: member set
  int target;            // node reached (for a call: the return node)
};

// A stack frame: the NFA node on top, the stack below it (-1: none), and the mask of listed
// members written when the frame's rule is a member set (0 otherwise).
struct Frame {
  int node;
  int parent;
  std::uint64_t mask;
};

// The guards of a member set's edges, from its Grammar::MemberSet.
struct MemberGuard {
  std::uint64_t required = 0;
  std::vector<std::uint64_t> needs;
  int min_members = 0, max_members = -1;
  std::uint64_t live = 0;  // members whose branch survived trimming (can be written at all)
  int select = -1;         // the node whose choose edges pick the next member
  bool extra = false;      // additional members are allowed

  // `written` and every member the written ones need, transitively, and the required ones.
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
  bool can_finish(std::uint64_t written) const {
    return closure(written) == written && std::popcount(written) >= min_members;
  }
  // True when some completion of `written` exists: its closure, grown greedily by live
  // members (with their closures) up to min_members, within max_members. Greedy growth may
  // miss a completion under a tight max with dependencies (a valid object refused, never an
  // invalid one accepted).
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
  bool can_choose(std::uint64_t written, int bit) const {
    const std::uint64_t b = std::uint64_t{1} << bit;
    return (written & b) == 0 && (max_members < 0 || std::popcount(written) < max_members) &&
           can_complete(written | b);
  }
  bool can_continue(std::uint64_t written) const {
    if (extra) return true;
    for (std::uint64_t rest = live & ~written; rest != 0; rest &= rest - 1) {
      if (can_choose(written, std::countr_zero(rest))) return true;
    }
    return false;
  }
};

// An index of ids by 64-bit key: open addressing with linear probing in a power-of-two table,
// Fibonacci hashing. Interning is the engine's hottest lookup (every edge a new state follows
// interns a stack, every new transition a state), and a node-based hash map spent its time in
// allocation, pointer chasing and rehashing. The frames without a mask are keyed by
// (node, parent) packed in 64 bits, which is exact; states by a hash of their stacks, so a
// key match is confirmed by comparing the state itself (`same`).
class StackIndex {
 public:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // no (node, parent + 1) packs to it

  // Room for n keys without growing.
  void reserve(std::size_t n) {
    if (2 * n > slots_.size()) rehash(std::bit_ceil(2 * n));
  }
  // The value of `key`, inserting `value` when absent; second = inserted.
  std::pair<int, bool> try_emplace(std::uint64_t key, int value) {
    return try_emplace(key, value, [](int) { return true; });
  }
  // The same, where a value stored under `key` is the one sought only when same(value) holds
  // (keys that are hashes may collide). `key` must not be kEmpty.
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

}  // namespace

struct PushdownParser::Impl {
  ParserLimits limits;
  std::vector<ByteSet> sets;
  std::vector<std::vector<Edge>> edges;  // per node
  std::vector<int> node_rule;
  std::vector<int> rule_start, rule_end;
  std::vector<std::string> rule_name;
  // Bytes that every byte set treats alike share a class: a transition computed for one byte
  // of a class holds for all of them (the string-character bytes of JSON are one class).
  std::array<std::uint8_t, 256> byte_class{};
  int num_classes = 0;

  std::vector<MemberGuard> guards;  // by member set
  std::vector<int> guard_start;     // by member set: its rule's start node

  // Hash-consed stacks: id -> frame. Frames without a mask (all but member sets') are found
  // by (node, parent) in stack_index, the others in masked_index.
  std::vector<Frame> stacks;
  StackIndex stack_index;
  struct FrameHash {
    std::size_t operator()(const Frame& f) const {
      return std::hash<std::uint64_t>()(f.mask * 0x9E3779B97F4A7C15ull ^
                                        (static_cast<std::uint64_t>(f.node) << 32) ^
                                        static_cast<std::uint32_t>(f.parent));
    }
  };
  struct FrameEq {
    bool operator()(const Frame& a, const Frame& b) const {
      return a.node == b.node && a.parent == b.parent && a.mask == b.mask;
    }
  };
  std::unordered_map<Frame, int, FrameHash, FrameEq> masked_index;
  // The parser states by a hash of their stacks and accept flag (PushdownParser::intern_state).
  StackIndex state_index;
  std::vector<std::uint32_t> stamp;  // closure's visited marks, by stack id
  std::uint32_t generation = 0;

  int new_node(int rule) {
    if (static_cast<int>(edges.size()) >= limits.max_nodes) {
      throw Error(
          fmt::format("grammar too large: more than {} automaton nodes (counted "
                      "repetitions are expanded; lower the counts)",
                      limits.max_nodes));
    }
    edges.emplace_back();
    node_rule.push_back(rule);
    return static_cast<int>(edges.size()) - 1;
  }

  // By expression: the index of its byte set in `sets` (-1: not looked up yet). An expression
  // is built once per use (a literal's bytes are shared by every literal), its set found once.
  std::vector<int> expr_set;
  int set_index(const ByteSet& s) {
    for (std::size_t i = 0; i < sets.size(); ++i) {
      if (sets[i] == s) return static_cast<int>(i);
    }
    sets.push_back(s);
    return static_cast<int>(sets.size()) - 1;
  }

  // Thompson construction: adds nodes and edges so that the paths from `from` to `to` spell
  // exactly the strings of expression `e`. Loops always go through fresh nodes.
  void build(const Grammar& g, int e, int from, int to, int rule, int depth) {
    if (depth > 10000) throw Error("grammar expression nested more than 10000 levels deep");
    const Expr& x = g.exprs[static_cast<std::size_t>(e)];
    switch (x.kind) {
      case ExprKind::empty:
        edges[from].push_back({EdgeKind::eps, 0, 0, to});
        break;
      case ExprKind::bytes:
        if (!x.set.empty()) {
          int& k = expr_set[static_cast<std::size_t>(e)];
          if (k < 0) k = set_index(x.set);
          edges[from].push_back({EdgeKind::bytes, 0, k, to});
        }
        break;
      case ExprKind::ref:
        edges[from].push_back({EdgeKind::call, 0, x.rule, to});
        break;
      case ExprKind::members:
        build_members(g, x.member_set, from, to, rule, depth);
        break;
      case ExprKind::seq: {
        int cur = from;
        for (std::size_t i = 0; i < x.children.size(); ++i) {
          const int next = i + 1 == x.children.size() ? to : new_node(rule);
          build(g, x.children[i], cur, next, rule, depth + 1);
          cur = next;
        }
        if (x.children.empty()) edges[from].push_back({EdgeKind::eps, 0, 0, to});
        break;
      }
      case ExprKind::alt:
        for (const int c : x.children) {
          // A fresh entry node per branch keeps a branch's loops from mixing with the others.
          const int a = new_node(rule);
          edges[from].push_back({EdgeKind::eps, 0, 0, a});
          build(g, c, a, to, rule, depth + 1);
        }
        break;
      case ExprKind::repeat: {
        const int child = x.children[0];
        int cur = from;
        for (int i = 0; i < x.min; ++i) {
          const int next = new_node(rule);
          build(g, child, cur, next, rule, depth + 1);
          cur = next;
        }
        if (x.max < 0) {
          const int loop = new_node(rule);
          edges[cur].push_back({EdgeKind::eps, 0, 0, loop});
          const int back = new_node(rule);
          build(g, child, loop, back, rule, depth + 1);
          edges[back].push_back({EdgeKind::eps, 0, 0, loop});
          edges[loop].push_back({EdgeKind::eps, 0, 0, to});
        } else {
          for (int i = x.min; i < x.max; ++i) {
            edges[cur].push_back({EdgeKind::eps, 0, 0, to});
            const int next = new_node(rule);
            build(g, child, cur, next, rule, depth + 1);
            cur = next;
          }
          edges[cur].push_back({EdgeKind::eps, 0, 0, to});
        }
        break;
      }
    }
  }

  // A member set (the whole expression of its rule): from `select`, a choose edge into each
  // member and an empty edge into the additional member, both ending at `after`; from there
  // more, then a separator back to `select`, or finish to the rule's end (also from the
  // start: no member at all).
  void build_members(const Grammar& g, int set, int from, int to, int rule, int depth) {
    const MemberSet& m = g.member_sets[static_cast<std::size_t>(set)];
    if (from != rule_start[static_cast<std::size_t>(rule)] ||
        to != rule_end[static_cast<std::size_t>(rule)]) {
      throw Error(fmt::format("rule '{}': a member set must be its rule's whole expression",
                              rule_name[static_cast<std::size_t>(rule)]));
    }
    MemberGuard guard;
    guard.required = m.required;
    guard.needs = m.needs;
    guard.min_members = m.min_members;
    guard.max_members = m.max_members;
    guard.extra = m.extra >= 0;
    guard.select = new_node(rule);
    const int guard_id = static_cast<int>(guards.size());
    guards.push_back(std::move(guard));
    guard_start.push_back(from);
    const int select = guards.back().select, after = new_node(rule);
    edges[from].push_back({EdgeKind::eps, 0, 0, select});
    for (std::size_t i = 0; i < m.members.size(); ++i) {
      const int entry = new_node(rule);
      edges[select].push_back({EdgeKind::choose, static_cast<std::uint8_t>(i), guard_id, entry});
      build(g, m.members[i], entry, after, rule, depth + 1);
    }
    if (m.extra >= 0) {
      const int entry = new_node(rule);
      edges[select].push_back({EdgeKind::eps, 0, 0, entry});
      build(g, m.extra, entry, after, rule, depth + 1);
    }
    const int separator = new_node(rule), separated = new_node(rule);
    edges[after].push_back({EdgeKind::more, 0, guard_id, separator});
    build(g, m.separator, separator, separated, rule, depth + 1);
    edges[separated].push_back({EdgeKind::eps, 0, 0, select});
    edges[from].push_back({EdgeKind::finish, 0, guard_id, to});
    edges[after].push_back({EdgeKind::finish, 0, guard_id, to});
  }

  int intern_stack(int node, int parent, std::uint64_t mask = 0) {
    const int id = static_cast<int>(stacks.size());
    bool inserted = false;
    int found = id;
    if (mask == 0) {
      const std::uint64_t key =
          (static_cast<std::uint64_t>(static_cast<std::uint32_t>(node)) << 32) |
          static_cast<std::uint32_t>(parent + 1);
      std::tie(found, inserted) = stack_index.try_emplace(key, id);
    } else {
      const auto it = masked_index.try_emplace(Frame{node, parent, mask}, id);
      inserted = it.second;
      found = it.first->second;
    }
    if (inserted) {
      if (id >= limits.max_interned_stacks) {
        throw Error(fmt::format("parser exceeded {} distinct stacks (nesting too deep)",
                                limits.max_interned_stacks));
      }
      stacks.push_back(Frame{node, parent, mask});
      stamp.push_back(0);
    }
    return found;
  }

  // Follows every edge that reads no byte from the seed stacks: empty edges, calls (push the
  // callee's start over the return address) and rule ends (pop). Keeps the stacks whose top
  // can read a byte; sets accept when the start rule can end.
  void closure(std::vector<int>& work, PushdownParser::RawState& out) {
    if (++generation == 0) {
      std::fill(stamp.begin(), stamp.end(), 0);
      generation = 1;
    }
    while (!work.empty()) {
      const int s = work.back();
      work.pop_back();
      if (stamp[static_cast<std::size_t>(s)] == generation) continue;
      stamp[static_cast<std::size_t>(s)] = generation;
      const auto [node, parent, mask] = stacks[static_cast<std::size_t>(s)];
      bool reads = false;
      for (const Edge& e : edges[static_cast<std::size_t>(node)]) {
        switch (e.kind) {
          case EdgeKind::bytes:
            reads = true;
            break;
          case EdgeKind::eps:
            work.push_back(intern_stack(e.target, parent, mask));
            break;
          case EdgeKind::choose:
            if (guards[static_cast<std::size_t>(e.arg)].can_choose(mask, e.bit)) {
              work.push_back(intern_stack(e.target, parent, mask | std::uint64_t{1} << e.bit));
            }
            break;
          case EdgeKind::more:
            if (guards[static_cast<std::size_t>(e.arg)].can_continue(mask))
              work.push_back(intern_stack(e.target, parent, mask));
            break;
          case EdgeKind::finish:
            if (guards[static_cast<std::size_t>(e.arg)].can_finish(mask))
              work.push_back(intern_stack(e.target, parent));
            break;
          case EdgeKind::call: {
            // A tail call (see compute_tail_nodes) returns straight to `parent`.
            const int ret = tail[static_cast<std::size_t>(e.target)]
                                ? parent
                                : intern_stack(e.target, parent, mask);
            work.push_back(intern_stack(rule_start[static_cast<std::size_t>(e.arg)], ret));
            break;
          }
        }
      }
      if (reads) out.stacks.push_back(s);
      if (node == rule_end[static_cast<std::size_t>(node_rule[static_cast<std::size_t>(node)])]) {
        if (parent < 0) {
          out.accept = true;
        } else {
          work.push_back(parent);
        }
      }
    }
    std::sort(out.stacks.begin(), out.stacks.end());
    if (static_cast<int>(out.stacks.size()) > limits.max_stacks_per_state) {
      throw Error(fmt::format("grammar too ambiguous: more than {} parser stacks in one state",
                              limits.max_stacks_per_state));
    }
  }

  PushdownParser::RawState step(const PushdownParser::RawState& from, unsigned char byte) {
    std::vector<int> work;
    for (const int s : from.stacks) {
      const auto [node, parent, mask] = stacks[static_cast<std::size_t>(s)];
      for (const Edge& e : edges[static_cast<std::size_t>(node)]) {
        if (e.kind == EdgeKind::bytes && sets[static_cast<std::size_t>(e.arg)].has(byte)) {
          work.push_back(intern_stack(e.target, parent, mask));
        }
      }
    }
    PushdownParser::RawState out;
    if (!work.empty()) closure(work, out);
    return out;
  }

  // The closure of one stack, memoized (by stack id) for the DFA's transitions: a state's
  // step is the union of the closures of the stacks its byte edges push, and closures are
  // pure reachability, so the union of the parts is the closure of the whole. Many states
  // share stacks (every state inside the same string shares its character stacks), so most
  // closures are found here. step() above stays uncached: it is the oracle's definition.
  struct Closure {
    std::size_t first = 0;  // its stacks: closure_stacks[first .. first + size)
    std::uint32_t size = 0;
    bool accept = false;
    bool done = false;
  };
  std::vector<Closure> closure_memo;
  // Every memoized closure's stacks, one after another: a new stack's closure is an append
  // here, not an allocation of its own (a new state of a long counted string pushes a hundred
  // new stacks).
  std::vector<int> closure_stacks;
  std::vector<int> closure_work;  // closure_of's buffers, reused
  PushdownParser::RawState closure_out;
  const Closure& closure_of(int stack) {
    if (static_cast<std::size_t>(stack) >= closure_memo.size())
      closure_memo.resize(static_cast<std::size_t>(stack) + 1);
    if (!closure_memo[static_cast<std::size_t>(stack)].done) {
      closure_work.assign(1, stack);
      closure_out.stacks.clear();
      closure_out.accept = false;
      closure(closure_work, closure_out);
      Closure& c = closure_memo[static_cast<std::size_t>(stack)];
      c.first = closure_stacks.size();
      c.size = static_cast<std::uint32_t>(closure_out.stacks.size());
      closure_stacks.insert(closure_stacks.end(), closure_out.stacks.begin(),
                            closure_out.stacks.end());
      c.accept = closure_out.accept;
      c.done = true;
    }
    return closure_memo[static_cast<std::size_t>(stack)];
  }
  // step_memo's buffers, reused: a new transition allocates only when it makes a new state.
  std::vector<int> pushed;
  PushdownParser::RawState stepped;
  const PushdownParser::RawState& step_memo(const std::vector<int>& from, unsigned char byte) {
    pushed.clear();
    for (const int s : from) {
      const auto [node, parent, mask] = stacks[static_cast<std::size_t>(s)];
      for (const Edge& e : edges[static_cast<std::size_t>(node)]) {
        if (e.kind == EdgeKind::bytes && sets[static_cast<std::size_t>(e.arg)].has(byte)) {
          pushed.push_back(intern_stack(e.target, parent, mask));
        }
      }
    }
    PushdownParser::RawState& out = stepped;
    out.stacks.clear();
    out.accept = false;
    std::sort(pushed.begin(), pushed.end());
    pushed.erase(std::unique(pushed.begin(), pushed.end()), pushed.end());
    for (const int p : pushed) {
      const Closure& c = closure_of(p);
      const auto first = closure_stacks.begin() + c.first;
      out.stacks.insert(out.stacks.end(), first, first + c.size);
      out.accept = out.accept || c.accept;
    }
    std::sort(out.stacks.begin(), out.stacks.end());
    out.stacks.erase(std::unique(out.stacks.begin(), out.stacks.end()), out.stacks.end());
    if (static_cast<int>(out.stacks.size()) > limits.max_stacks_per_state) {
      throw Error(fmt::format("grammar too ambiguous: more than {} parser stacks in one state",
                              limits.max_stacks_per_state));
    }
    return out;
  }

  // Per byte class of a state with stacks `from`: same[c] = the smallest class c' that leads
  // where c does. A step reads a byte only through the byte sets on the edges of the stacks'
  // top nodes, so two classes that each of those sets holds or lacks alike push the same
  // stacks: the same state, computed once. Inside a string, a grammar whose patterns split
  // the letters and digits into many classes has one transition per string position for all
  // of them, and the continuation bytes of a UTF-8 character are one.
  std::vector<std::array<std::uint64_t, 4>> set_classes;  // by set: the classes it holds
  std::vector<std::uint8_t> set_classes_known;            // by set
  std::vector<std::uint32_t> node_seen;                   // equivalent_classes' marks, by node
  std::uint32_t node_generation = 0;
  // The byte sets on the top nodes' edges, and per class its signature (bit i: top_sets[i]
  // holds the class); the groups' table by signature: 512 slots, twice the most classes.
  std::vector<int> top_sets;
  std::vector<std::uint64_t> signature;
  std::array<std::uint64_t, 512> group_key{};
  std::array<std::uint8_t, 512> group_first{};
  std::array<std::uint32_t, 512> group_stamp{};
  std::uint32_t group_generation = 0;
  void equivalent_classes(const std::vector<int>& from, std::vector<std::uint8_t>& same) {
    const auto classes = static_cast<std::size_t>(num_classes);
    same.resize(classes);
    if (node_seen.size() < edges.size()) node_seen.resize(edges.size(), 0);
    if (++node_generation == 0) {
      std::fill(node_seen.begin(), node_seen.end(), 0);
      node_generation = 1;
    }
    top_sets.clear();
    for (const int s : from) {
      const auto node = static_cast<std::size_t>(stacks[static_cast<std::size_t>(s)].node);
      if (node_seen[node] == node_generation) continue;
      node_seen[node] = node_generation;
      for (const Edge& e : edges[node]) {
        if (e.kind == EdgeKind::bytes) top_sets.push_back(e.arg);
      }
    }
    std::sort(top_sets.begin(), top_sets.end());
    top_sets.erase(std::unique(top_sets.begin(), top_sets.end()), top_sets.end());
    signature.assign(classes, 0);
    if (top_sets.size() > 64) {  // a signature is one word: every class stands alone
      for (std::size_t c = 0; c < classes; ++c) same[c] = static_cast<std::uint8_t>(c);
      return;
    }
    if (set_classes.size() < sets.size()) {
      set_classes.resize(sets.size());
      set_classes_known.resize(sets.size(), 0);
    }
    for (std::size_t i = 0; i < top_sets.size(); ++i) {
      const auto k = static_cast<std::size_t>(top_sets[i]);
      if (!set_classes_known[k]) {
        set_classes[k] = {};
        for (int b = 0; b < 256; ++b) {
          const std::uint8_t c = byte_class[static_cast<std::size_t>(b)];
          if (sets[k].has(static_cast<unsigned>(b)))
            set_classes[k][c >> 6] |= std::uint64_t{1} << (c & 63);
        }
        set_classes_known[k] = 1;
      }
      const std::uint64_t bit = std::uint64_t{1} << i;
      for (std::size_t w = 0; w < 4; ++w) {
        for (std::uint64_t bits = set_classes[k][w]; bits != 0; bits &= bits - 1)
          signature[w * 64 + static_cast<std::size_t>(std::countr_zero(bits))] |= bit;
      }
    }
    // The first class with each signature names its group: found in a small open-addressing
    // table (twice as many slots as classes), cleared by a generation stamp.
    if (++group_generation == 0) {
      std::fill(group_stamp.begin(), group_stamp.end(), 0);
      group_generation = 1;
    }
    for (std::size_t c = 0; c < classes; ++c) {
      for (std::size_t i = (signature[c] * 0x9E3779B97F4A7C15ull) >> 55;; i = (i + 1) & 511) {
        if (group_stamp[i] != group_generation) {
          group_stamp[i] = group_generation;
          group_key[i] = signature[c];
          group_first[i] = static_cast<std::uint8_t>(c);
        }
        if (group_key[i] == signature[c]) {
          same[c] = group_first[i];
          break;
        }
      }
    }
  }

  void trim();
  void trim_edges();
  void compute_byte_classes() {
    // Partition refinement, a word at a time: each set splits every class it cuts in two.
    ByteSet all;
    all.invert();
    std::vector<ByteSet> parts{all};
    for (const ByteSet& s : sets) {
      for (std::size_t i = 0, n = parts.size(); i < n; ++i) {
        ByteSet in, out;
        for (std::size_t w = 0; w < 4; ++w) {
          in.bits[w] = parts[i].bits[w] & s.bits[w];
          out.bits[w] = parts[i].bits[w] & ~s.bits[w];
        }
        if (in.empty() || out.empty()) continue;
        parts[i] = in;
        parts.push_back(out);
      }
    }
    // Classes are numbered in the order of their smallest byte.
    std::array<std::size_t, 256> part_of{};
    for (std::size_t i = 0; i < parts.size(); ++i) {
      for (std::size_t w = 0; w < 4; ++w) {
        for (std::uint64_t bits = parts[i].bits[w]; bits != 0; bits &= bits - 1)
          part_of[w * 64 + static_cast<std::size_t>(std::countr_zero(bits))] = i;
      }
    }
    std::vector<int> id(parts.size(), -1);
    int n = 0;
    for (std::size_t b = 0; b < 256; ++b) {
      int& c = id[part_of[b]];
      if (c < 0) c = n++;
      byte_class[b] = static_cast<std::uint8_t>(c);
    }
    num_classes = n;
  }
  void check_left_recursion();

  // tail[n]: node n reads nothing and calls nothing before its rule ends (it is its rule's
  // end, or has only empty edges into such nodes). A call that returns to such a node is a
  // tail call: the callee may return straight to the caller's return address, as a compiler
  // turns a call in tail position into a jump. The language is unchanged (the skipped frame
  // would only have been popped at once), but states that differ only in such frames become
  // one state: a key that leaves the trie of listed names at any letter continues in one free
  // tail (JsonSchema's other_key calls one tail rule last), not one copy per letter, and the
  // states of that tail and their masks are built once.
  std::vector<std::uint8_t> tail;
  void compute_tail_nodes() {
    tail.assign(edges.size(), 0);
    for (const int end : rule_end) {
      if (edges[static_cast<std::size_t>(end)].empty()) tail[static_cast<std::size_t>(end)] = 1;
    }
    // Least fixpoint: a node whose edges are all empty edges into tail nodes is a tail node.
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t n = 0; n < edges.size(); ++n) {
        if (tail[n] || edges[n].empty()) continue;
        if (std::all_of(edges[n].begin(), edges[n].end(), [&](const Edge& e) {
              return e.kind == EdgeKind::eps && tail[static_cast<std::size_t>(e.target)];
            })) {
          tail[n] = 1;
          changed = true;
        }
      }
    }
  }
};

// Removes every node that cannot reach its rule's end (and the edges into it), and every call
// of a rule that matches nothing: afterwards any stack can finish, so "not dead" means "viable".
// A member set's guarded edges count as empty edges here; a set that no choice of its live
// members can complete then loses its start's edges, and trimming runs again.
void PushdownParser::Impl::trim() {
  for (bool again = true; again;) {
    trim_edges();
    again = false;
    for (std::size_t k = 0; k < guards.size(); ++k) {
      MemberGuard& guard = guards[k];
      guard.live = 0;
      for (const Edge& e : edges[static_cast<std::size_t>(guard.select)]) {
        if (e.kind == EdgeKind::choose) guard.live |= std::uint64_t{1} << e.bit;
      }
      auto& start = edges[static_cast<std::size_t>(guard_start[k])];
      if (!start.empty() && !guard.can_complete(0)) {
        start.clear();
        again = true;
      }
    }
  }
}

void PushdownParser::Impl::trim_edges() {
  const std::size_t n = edges.size(), r = rule_start.size();
  std::vector<char> live(n, 0), productive(r, 0);
  // The reverse edges (target -> (pred, call rule or -1)) and the calls of each rule
  // (rule -> (pred, return node)), each in one array indexed by offsets (counted first): one
  // allocation each, not one per node.
  std::vector<std::uint32_t> rev_first(n + 1, 0), call_first(r + 1, 0);
  for (const auto& list : edges) {
    for (const Edge& e : list) {
      ++rev_first[static_cast<std::size_t>(e.target) + 1];
      if (e.kind == EdgeKind::call) ++call_first[static_cast<std::size_t>(e.arg) + 1];
    }
  }
  for (std::size_t u = 0; u < n; ++u) rev_first[u + 1] += rev_first[u];
  for (std::size_t k = 0; k < r; ++k) call_first[k + 1] += call_first[k];
  std::vector<std::pair<int, int>> rev(rev_first[n]), callers(call_first[r]);
  {
    std::vector<std::uint32_t> rev_next(rev_first.begin(), rev_first.end() - 1);
    std::vector<std::uint32_t> call_next(call_first.begin(), call_first.end() - 1);
    for (std::size_t u = 0; u < n; ++u) {
      for (const Edge& e : edges[u]) {
        rev[rev_next[static_cast<std::size_t>(e.target)]++] = {
            static_cast<int>(u), e.kind == EdgeKind::call ? e.arg : -1};
        if (e.kind == EdgeKind::call)
          callers[call_next[static_cast<std::size_t>(e.arg)]++] = {static_cast<int>(u), e.target};
      }
    }
  }
  std::vector<int> work;
  auto mark = [&](int u) {
    if (!live[static_cast<std::size_t>(u)]) {
      live[static_cast<std::size_t>(u)] = 1;
      work.push_back(u);
    }
  };
  for (std::size_t k = 0; k < r; ++k) mark(rule_end[k]);
  std::vector<int> start_of(n, -1);
  for (std::size_t k = 0; k < r; ++k)
    start_of[static_cast<std::size_t>(rule_start[k])] = static_cast<int>(k);
  while (!work.empty()) {
    const auto u = static_cast<std::size_t>(work.back());
    work.pop_back();
    for (std::uint32_t i = rev_first[u]; i < rev_first[u + 1]; ++i) {
      const auto [pred, call] = rev[i];
      if (call < 0 || productive[static_cast<std::size_t>(call)]) mark(pred);
    }
    if (const int k = start_of[u]; k >= 0 && !productive[static_cast<std::size_t>(k)]) {
      productive[static_cast<std::size_t>(k)] = 1;
      for (std::uint32_t i = call_first[static_cast<std::size_t>(k)];
           i < call_first[static_cast<std::size_t>(k) + 1]; ++i) {
        const auto [pred, ret] = callers[i];
        if (live[static_cast<std::size_t>(ret)]) mark(pred);
      }
    }
  }
  for (auto& list : edges) {
    std::erase_if(list, [&](const Edge& e) {
      return !live[static_cast<std::size_t>(e.target)] ||
             (e.kind == EdgeKind::call && !productive[static_cast<std::size_t>(e.arg)]);
    });
  }
}

// A rule that can call itself before reading any byte would push forever: reject it by name.
void PushdownParser::Impl::check_left_recursion() {
  const std::size_t r = rule_start.size();
  std::vector<char> nullable(r, 0);
  // Which rules each rule can call before reading a byte, and whether it can end that way.
  // visited[u] == pass: node u was reached in this scan (no clearing between scans).
  std::vector<std::uint32_t> visited(edges.size(), 0);
  std::uint32_t pass = 0;
  std::vector<int> work;
  auto scan = [&](std::size_t k, std::vector<int>* calls) {
    ++pass;
    work.assign(1, rule_start[k]);
    bool ends = false;
    while (!work.empty()) {
      const int u = work.back();
      work.pop_back();
      if (visited[static_cast<std::size_t>(u)] == pass) continue;
      visited[static_cast<std::size_t>(u)] = pass;
      if (u == rule_end[k]) ends = true;
      for (const Edge& e : edges[static_cast<std::size_t>(u)]) {
        if (e.kind != EdgeKind::bytes && e.kind != EdgeKind::call) work.push_back(e.target);
        if (e.kind == EdgeKind::call) {
          if (calls) calls->push_back(e.arg);
          if (nullable[static_cast<std::size_t>(e.arg)]) work.push_back(e.target);
        }
      }
    }
    return ends;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < r; ++k) {
      if (!nullable[k] && scan(k, nullptr)) nullable[k] = changed = true;
    }
  }
  std::vector<std::vector<int>> left(r);
  for (std::size_t k = 0; k < r; ++k) scan(k, &left[k]);
  // Iterative DFS for a cycle in the "calls first" graph.
  std::vector<char> color(r, 0);
  for (std::size_t k0 = 0; k0 < r; ++k0) {
    if (color[k0]) continue;
    std::vector<std::pair<int, std::size_t>> st{{static_cast<int>(k0), 0}};
    color[k0] = 1;
    while (!st.empty()) {
      auto& [k, i] = st.back();
      const auto& out = left[static_cast<std::size_t>(k)];
      if (i == out.size()) {
        color[static_cast<std::size_t>(k)] = 2;
        st.pop_back();
        continue;
      }
      const int c = out[i++];
      if (color[static_cast<std::size_t>(c)] == 1) {
        throw Error(
            fmt::format("rule '{}' is left-recursive (it can reach itself before reading "
                        "any input), which this parser does not support; rewrite it "
                        "with repetition, e.g. a ::= b (\",\" b)*",
                        rule_name[static_cast<std::size_t>(c)]));
      }
      if (color[static_cast<std::size_t>(c)] == 0) {
        color[static_cast<std::size_t>(c)] = 1;
        st.emplace_back(c, 0);
      }
    }
  }
}

PushdownParser::PushdownParser(const Grammar& g, const ParserLimits& limits)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.limits = limits;
  if (g.root < 0 || g.root >= static_cast<int>(g.rules.size()))
    throw Error("grammar has no start rule");
  const std::size_t r = g.rules.size();
  for (std::size_t k = 0; k < r; ++k) {
    if (g.rules[k].expr < 0)
      throw Error(fmt::format("rule '{}' is used but never defined", g.rules[k].name));
  }
  g.check_counted_repeats();
  for (std::size_t k = 0; k < r; ++k) {
    m.rule_name.push_back(g.rules[k].name);
    m.rule_start.push_back(m.new_node(static_cast<int>(k)));
    m.rule_end.push_back(m.new_node(static_cast<int>(k)));
  }
  m.expr_set.assign(g.exprs.size(), -1);
  for (std::size_t k = 0; k < r; ++k) {
    m.build(g, g.rules[k].expr, m.rule_start[k], m.rule_end[k], static_cast<int>(k), 0);
  }
  m.trim();
  m.check_left_recursion();
  m.compute_byte_classes();
  m.compute_tail_nodes();
  byte_class_ = m.byte_class;
  num_classes_ = m.num_classes;
  // The stack and state tables grow while the first masks are computed: sized up front, they
  // do not rehash in the middle of a mask (a rehash moves every entry at once). The hash
  // tables are cleared when reserved, so they are sized for the grammar (a few stacks per
  // automaton node; frames with a member mask only where the grammar has member sets): a
  // small grammar does not clear a large table.
  m.stack_index.reserve(std::min(kReservedStacks, 4 * m.edges.size()));
  if (!m.guards.empty()) m.masked_index.reserve(kReservedMaskedStacks);
  m.stacks.reserve(kReservedStacks);
  m.stamp.reserve(kReservedStacks);
  m.closure_memo.reserve(kReservedStacks);
  m.state_index.reserve(kReservedStates);
  states_.reserve(kReservedStates);
  std::vector<int> work{m.intern_stack(m.rule_start[static_cast<std::size_t>(g.root)], -1)};
  RawState init;
  m.closure(work, init);
  if (init.stacks.empty() && !init.accept) {
    throw Error(fmt::format("the constraint is unsatisfiable: start rule '{}' matches no string",
                            g.rules[static_cast<std::size_t>(g.root)].name));
  }
  initial_ = intern_state(init);
}

PushdownParser::~PushdownParser() = default;

int PushdownParser::num_nodes() const { return static_cast<int>(impl_->edges.size()); }

int PushdownParser::intern_state(const RawState& raw) {
  // The stacks are hashed where they lie and copied only for a new state.
  std::uint64_t key = raw.accept ? 0x9E3779B97F4A7C15ull : 0;
  for (const int s : raw.stacks) {
    key = (key ^ static_cast<std::uint32_t>(s)) * 0xFF51AFD7ED558CCDull;
    key ^= key >> 32;
  }
  if (key == StackIndex::kEmpty) key = 0;
  const int id = static_cast<int>(states_.size());
  const auto [found, inserted] = impl_->state_index.try_emplace(key, id, [&](int other) {
    const State& o = states_[static_cast<std::size_t>(other)];
    return o.accept == raw.accept && o.stacks == raw.stacks;
  });
  if (!inserted) return found;
  State s;
  s.stacks = raw.stacks;
  s.accept = raw.accept;
  states_.push_back(std::move(s));
  return id;
}

int PushdownParser::step_slow(int state, unsigned char byte) {
  State* s = &states_[static_cast<std::size_t>(state)];
  const std::size_t cls = byte_class_[byte];
  if (!s->next) {
    s->next = std::make_unique<int[]>(static_cast<std::size_t>(num_classes_));
    std::fill_n(s->next.get(), num_classes_, -2);
  }
  int next = s->next[cls];
  if (next != -2) return next;
  // The classes a state cannot tell apart are found when a second class is stepped: many
  // states are only ever stepped by one.
  if (s->same.empty() &&
      std::any_of(s->next.get(), s->next.get() + num_classes_, [](int n) { return n != -2; }))
    impl_->equivalent_classes(s->stacks, s->same);
  const std::size_t same = s->same.empty() ? cls : s->same[cls];
  next = s->next[same];
  if (next == -2) {
    const RawState& to = impl_->step_memo(s->stacks, byte);
    next = to.stacks.empty() && !to.accept ? kDead : intern_state(to);
  }
  // states_ may have moved (index it again); the result holds for the whole class, and for
  // the classes the state cannot tell from it.
  State& from = states_[static_cast<std::size_t>(state)];
  from.next[cls] = next;
  from.next[same] = next;
  return next;
}

int PushdownParser::advance(int state, std::string_view bytes) {
  for (const char c : bytes) {
    if (state == kDead) return kDead;
    state = step(state, static_cast<unsigned char>(c));
  }
  return state;
}

bool PushdownParser::has_caller(int stack) const {
  return impl_->stacks[static_cast<std::size_t>(stack)].parent >= 0;
}

int PushdownParser::top_frame_state(int stack) {
  const Frame top = impl_->stacks[static_cast<std::size_t>(stack)];
  // The top reads a byte, so the lone frame is its own closure: no closure to compute.
  RawState lone;
  lone.stacks.push_back(impl_->intern_stack(top.node, -1, top.mask));
  return intern_state(lone);
}

PushdownParser::RawState PushdownParser::raw(int state) const {
  if (state == kDead) return {};
  const State& s = states_[static_cast<std::size_t>(state)];
  return RawState{s.stacks, s.accept};
}

PushdownParser::RawState PushdownParser::step_uncached(const RawState& from, unsigned char byte) {
  return impl_->step(from, byte);
}

}  // namespace inferlab
