// The build half of the pushdown engine: grammar -> per-rule NFAs (Thompson construction),
// trimmed to live nodes, checked for left recursion, split into byte classes and tail nodes;
// and the constructor, which compiles them and builds the initial state. parser.cpp runs them.
#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "parser_impl.hpp"

namespace inferlab {

namespace {

constexpr std::size_t kReservedStacks = 8192, kReservedStates = 1024;
constexpr std::size_t kReservedMaskedStacks = 256;

}  // namespace

int PushdownParser::Impl::new_node(int rule) {
  if (static_cast<int>(edges.size()) >= limits.max_nodes) {
    throw Error(
        fmt::format("grammar too large: more than {} automaton nodes (counted "
                    "repetitions are expanded; lower the counts)",
                    limits.max_nodes));
  }
  edges.emplace_back(&edge_memory);
  node_rule.push_back(rule);
  return static_cast<int>(edges.size()) - 1;
}

int PushdownParser::Impl::set_index(const ByteSet& s) {
  std::uint64_t key = 0;
  for (const std::uint64_t w : s.bits) {
    key = (key ^ w) * 0xFF51AFD7ED558CCDull;
    key ^= key >> 32;
  }
  if (key == StackIndex::kEmpty) key = 0;
  const auto [found, inserted] =
      set_lookup.try_emplace(key, static_cast<int>(sets.size()),
                             [&](int other) { return sets[static_cast<std::size_t>(other)] == s; });
  if (inserted) sets.push_back(s);
  return found;
}

void PushdownParser::Impl::build(const Grammar& g, int e, int from, int to, int rule, int depth) {
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

void PushdownParser::Impl::build_members(const Grammar& g, int set, int from, int to, int rule,
                                         int depth) {
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

// Partition refinement, a word at a time: each set splits every class it cuts in two.
void PushdownParser::Impl::compute_byte_classes() {
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

void PushdownParser::Impl::compute_tail_nodes() {
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
  // Most grammars have fewer than two nodes per expression: room for that many up front
  // spares the node tables their growth (capacity never used is never touched).
  const std::size_t expected_nodes = std::min<std::size_t>(
      2 * (r + g.exprs.size()), static_cast<std::size_t>(std::max(limits.max_nodes, 0)));
  m.edges.reserve(expected_nodes);
  m.node_rule.reserve(expected_nodes);
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

}  // namespace inferlab
