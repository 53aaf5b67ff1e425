// The run half of the pushdown engine: parser states (sets of hash-consed stacks) built lazily
// as a DFA over the NFAs that parser_build.cpp compiles: interning, closures, steps, and the
// byte classes a state cannot tell apart.
#include "inferlab/constrain/parser.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "parser_impl.hpp"

namespace inferlab {

int PushdownParser::Impl::intern_stack(int node, int parent, std::uint64_t mask) {
  const int id = static_cast<int>(stacks.size());
  bool inserted = false;
  int found = id;
  if (mask == 0) {
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(node)) << 32) |
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

void PushdownParser::Impl::closure(std::vector<int>& work, PushdownParser::RawState& out) {
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

PushdownParser::RawState PushdownParser::Impl::step(const PushdownParser::RawState& from,
                                                    unsigned char byte) {
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

const PushdownParser::Impl::Closure& PushdownParser::Impl::closure_of(int stack) {
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

const PushdownParser::RawState& PushdownParser::Impl::step_memo(const std::vector<int>& from,
                                                                unsigned char byte) {
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

void PushdownParser::Impl::equivalent_classes(const std::vector<int>& from,
                                              std::vector<std::uint8_t>& same) {
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

PushdownParser::~PushdownParser() = default;

int PushdownParser::num_nodes() const { return static_cast<int>(impl_->edges.size()); }

int PushdownParser::intern_state(const RawState& raw) {
  // The stacks are hashed where they lie and copied only for a new state.
  std::uint64_t key = raw.accept ? 0x9E3779B97F4A7C15ull : 0;
  for (const int s : raw.stacks) {
    key = (key ^ static_cast<std::uint32_t>(s)) * 0xFF51AFD7ED558CCDull;
    key ^= key >> 32;
  }
  if (key == Impl::StackIndex::kEmpty) key = 0;
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
  const Impl::Frame top = impl_->stacks[static_cast<std::size_t>(stack)];
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
