// The strings a pattern, a format and length bounds allow together: each regex becomes a
// code point NFA (Thompson), then a DFA (subset construction); the DFAs' product is trimmed
// to its live states; then its product with a counter of code points, kept only while the
// bounds still decide something; then one grammar rule per state.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/constrain/regex.hpp"
#include "regex_tree.hpp"

namespace inferlab {

namespace {

using regex_tree::NodeKind;
using regex_tree::Ranges;
using regex_tree::RegexTree;

// Limits on the automata built here: past them, the schema is refused as too large (the
// parser's own node limit would be reached later, after the time spent building).
constexpr int kMaxNfaNodes = 1'000'000;
constexpr int kMaxDfaStates = 100'000;
constexpr int kMaxProductStates = 200'000;
constexpr int kUnbounded = std::numeric_limits<int>::max();

[[noreturn]] void too_large(const char* what, int limit) {
  throw Error(fmt::format("grammar too large: more than {} {} for a string's pattern, format "
                          "and length bounds together",
                          limit, what));
}

// One transition: the code points [lo, hi] lead to `target`.
struct Move {
  std::uint32_t lo, hi;
  int target;
};

// A code point DFA: state 0 starts; each state's moves are sorted and disjoint.
struct Dfa {
  std::vector<std::vector<Move>> moves;
  std::vector<bool> accept;

  int add_state(bool accepting) {
    moves.emplace_back();
    accept.push_back(accepting);
    return static_cast<int>(accept.size()) - 1;
  }
  int size() const { return static_cast<int>(accept.size()); }
};

// Thompson's construction over code point classes: empty edges and class edges.
class Nfa {
 public:
  // `max_copies`: counted repeats are built with at most that many copies (-1: as written).
  // With max_copies = max_length + 1 the strings of at most max_length code points stay the
  // same: such a string fills at most max_length copies with a code point or more, the others
  // match the empty string (or, when the item cannot, more copies than that cannot fit).
  Nfa(const RegexTree& t, int max_copies) : t_(t), max_copies_(max_copies) {
    start_ = new_node();
    accept_ = new_node();
    build(t.root, start_, accept_);
  }

  // Subset construction. Each DFA state is an empty-closed set of NFA nodes; its moves split
  // the code points at every bound of the classes its nodes read.
  Dfa determinize() const {
    Dfa d;
    std::map<std::vector<int>, int> index;
    std::vector<std::vector<int>> sets;
    auto intern = [&](std::vector<int> set) {
      closure(set);
      const auto [it, inserted] = index.try_emplace(set, static_cast<int>(sets.size()));
      if (inserted) {
        if (static_cast<int>(sets.size()) >= kMaxDfaStates) too_large("DFA states", kMaxDfaStates);
        d.add_state(std::binary_search(set.begin(), set.end(), accept_));
        sets.push_back(std::move(set));
      }
      return it->second;
    };
    intern({start_});
    for (std::size_t s = 0; s < sets.size(); ++s) {
      std::vector<std::uint32_t> cuts;  // each class [lo, hi] cuts before lo and after hi
      for (const int n : sets[s]) {
        for (const auto& [cls, to] : edges_[static_cast<std::size_t>(n)].reads) {
          for (const auto& [lo, hi] : t_.nodes[static_cast<std::size_t>(cls)].chars) {
            cuts.push_back(lo);
            cuts.push_back(hi + 1);
          }
        }
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      std::vector<Move> moves;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::uint32_t lo = cuts[i], hi = cuts[i + 1] - 1;
        std::vector<int> next;
        for (const int n : sets[s]) {
          for (const auto& [cls, to] : edges_[static_cast<std::size_t>(n)].reads) {
            if (contains(t_.nodes[static_cast<std::size_t>(cls)].chars, lo)) next.push_back(to);
          }
        }
        if (next.empty()) continue;
        const int target = intern(std::move(next));
        if (!moves.empty() && moves.back().target == target && moves.back().hi + 1 == lo) {
          moves.back().hi = hi;
        } else {
          moves.push_back({lo, hi, target});
        }
      }
      d.moves[s] = std::move(moves);
    }
    return d;
  }

 private:
  struct Edges {
    std::vector<int> empty;                    // targets of empty edges
    std::vector<std::pair<int, int>> reads;    // (chars node of the tree, target)
  };
  const RegexTree& t_;
  int max_copies_;
  std::vector<Edges> edges_;
  int start_ = -1, accept_ = -1;

  // Whether the sorted, disjoint ranges `r` hold `cp`.
  static bool contains(const Ranges& r, std::uint32_t cp) {
    const auto it = std::upper_bound(r.begin(), r.end(), cp,
                                     [](std::uint32_t v, const auto& range) { return v < range.first; });
    return it != r.begin() && std::prev(it)->second >= cp;
  }

  int new_node() {
    if (static_cast<int>(edges_.size()) >= kMaxNfaNodes) too_large("NFA nodes", kMaxNfaNodes);
    edges_.emplace_back();
    return static_cast<int>(edges_.size()) - 1;
  }
  void link(int from, int to) { edges_[static_cast<std::size_t>(from)].empty.push_back(to); }

  // Adds nodes and edges so that the paths from `from` to `to` spell node n's strings; loops
  // go through fresh nodes, so that a loop never mixes with another path through `from`.
  void build(int n, int from, int to) {
    const regex_tree::Node& x = t_.nodes[static_cast<std::size_t>(n)];
    switch (x.kind) {
      case NodeKind::empty:
        link(from, to);
        return;
      case NodeKind::chars:
        edges_[static_cast<std::size_t>(from)].reads.emplace_back(n, to);
        return;
      case NodeKind::seq: {
        int cur = from;
        for (std::size_t i = 0; i < x.children.size(); ++i) {
          const int next = i + 1 == x.children.size() ? to : new_node();
          build(x.children[i], cur, next);
          cur = next;
        }
        if (x.children.empty()) link(from, to);
        return;
      }
      case NodeKind::alt:
        for (const int c : x.children) {
          const int a = new_node();
          link(from, a);
          build(c, a, to);
        }
        return;
      case NodeKind::repeat: {
        const int min = max_copies_ < 0 ? x.min : std::min(x.min, max_copies_);
        const int max = max_copies_ < 0 || x.max < 0 ? x.max : std::min(x.max, max_copies_);
        int cur = from;
        // X{m,} is X{m-1} then one copy that loops (X+ is one copy, not two: nested
        // quantifiers stay linear).
        for (int i = 0; i < (max < 0 ? min - 1 : min); ++i) {
          const int next = new_node();
          build(x.children[0], cur, next);
          cur = next;
        }
        if (max < 0) {
          const int loop = new_node(), back = new_node();
          link(cur, loop);
          build(x.children[0], loop, back);
          link(back, loop);
          link(min > 0 ? back : loop, to);
          return;
        }
        for (int i = min; i < max; ++i) {
          link(cur, to);
          const int next = new_node();
          build(x.children[0], cur, next);
          cur = next;
        }
        link(cur, to);
        return;
      }
    }
  }

  // Adds to `set` every node its empty edges reach; sorts it.
  void closure(std::vector<int>& set) const {
    std::vector<bool> seen(edges_.size(), false);
    std::vector<int> work = set;
    set.clear();
    while (!work.empty()) {
      const int n = work.back();
      work.pop_back();
      if (seen[static_cast<std::size_t>(n)]) continue;
      seen[static_cast<std::size_t>(n)] = true;
      set.push_back(n);
      for (const int m : edges_[static_cast<std::size_t>(n)].empty) work.push_back(m);
    }
    std::sort(set.begin(), set.end());
  }
};

// The product of two DFAs: the strings both accept.
Dfa intersect(const Dfa& a, const Dfa& b) {
  Dfa d;
  std::map<std::pair<int, int>, int> index;
  std::vector<std::pair<int, int>> pairs;
  auto intern = [&](int x, int y) {
    const auto [it, inserted] = index.try_emplace({x, y}, static_cast<int>(pairs.size()));
    if (inserted) {
      if (static_cast<int>(pairs.size()) >= kMaxDfaStates) too_large("DFA states", kMaxDfaStates);
      d.add_state(a.accept[static_cast<std::size_t>(x)] && b.accept[static_cast<std::size_t>(y)]);
      pairs.emplace_back(x, y);
    }
    return it->second;
  };
  intern(0, 0);
  for (std::size_t s = 0; s < pairs.size(); ++s) {
    const auto& ma = a.moves[static_cast<std::size_t>(pairs[s].first)];
    const auto& mb = b.moves[static_cast<std::size_t>(pairs[s].second)];
    std::vector<Move> moves;
    for (std::size_t i = 0, j = 0; i < ma.size() && j < mb.size();) {
      const std::uint32_t lo = std::max(ma[i].lo, mb[j].lo), hi = std::min(ma[i].hi, mb[j].hi);
      if (lo <= hi) moves.push_back({lo, hi, intern(ma[i].target, mb[j].target)});
      if (ma[i].hi < mb[j].hi) {
        ++i;
      } else {
        ++j;
      }
    }
    d.moves[s] = std::move(moves);
  }
  return d;
}

// The states from which an accepting state can be reached.
std::vector<bool> live_states(const Dfa& d) {
  std::vector<std::vector<int>> into(static_cast<std::size_t>(d.size()));
  for (int s = 0; s < d.size(); ++s) {
    for (const Move& m : d.moves[static_cast<std::size_t>(s)])
      into[static_cast<std::size_t>(m.target)].push_back(s);
  }
  std::vector<bool> live(static_cast<std::size_t>(d.size()), false);
  std::vector<int> work;
  for (int s = 0; s < d.size(); ++s) {
    if (d.accept[static_cast<std::size_t>(s)]) work.push_back(s);
  }
  while (!work.empty()) {
    const int s = work.back();
    work.pop_back();
    if (live[static_cast<std::size_t>(s)]) continue;
    live[static_cast<std::size_t>(s)] = true;
    for (const int p : into[static_cast<std::size_t>(s)]) work.push_back(p);
  }
  return live;
}

// `d` without its dead states (and the moves into them); state 0 stays the start. An empty
// language (or no state at all: a start the bounds already exclude) gives one state that
// accepts nothing.
Dfa trim(const Dfa& d) {
  Dfa out;
  if (d.size() == 0) {
    out.add_state(false);
    return out;
  }
  const std::vector<bool> live = live_states(d);
  std::vector<int> renumber(static_cast<std::size_t>(d.size()), -1);
  out.add_state(live[0] && d.accept[0]);
  renumber[0] = 0;
  for (int s = 1; s < d.size(); ++s) {
    if (live[static_cast<std::size_t>(s)])
      renumber[static_cast<std::size_t>(s)] = out.add_state(d.accept[static_cast<std::size_t>(s)]);
  }
  for (int s = 0; s < d.size(); ++s) {
    const int r = renumber[static_cast<std::size_t>(s)];
    if (r < 0 || !live[static_cast<std::size_t>(s)]) continue;
    for (const Move& m : d.moves[static_cast<std::size_t>(s)]) {
      const int t = renumber[static_cast<std::size_t>(m.target)];
      if (t >= 0 && live[static_cast<std::size_t>(m.target)])
        out.moves[static_cast<std::size_t>(r)].push_back({m.lo, m.hi, t});
    }
  }
  return out;
}

// The fewest and most code points from each state of a trimmed DFA to acceptance (most:
// kUnbounded when a loop can be reached).
struct Completions {
  std::vector<int> shortest, longest;
};

Completions completions(const Dfa& d) {
  const std::size_t n = static_cast<std::size_t>(d.size());
  std::vector<std::vector<int>> into(n);
  std::vector<int> out_degree(n, 0);
  for (std::size_t s = 0; s < n; ++s) {
    for (const Move& m : d.moves[s]) {
      into[static_cast<std::size_t>(m.target)].push_back(static_cast<int>(s));
      ++out_degree[s];
    }
  }
  Completions c{std::vector<int>(n, kUnbounded), std::vector<int>(n, kUnbounded)};
  // Shortest: breadth first backwards from the accepting states (every move is one code point).
  std::vector<int> queue;
  for (std::size_t s = 0; s < n; ++s) {
    if (d.accept[s]) {
      c.shortest[s] = 0;
      queue.push_back(static_cast<int>(s));
    }
  }
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const int s = queue[i];
    for (const int p : into[static_cast<std::size_t>(s)]) {
      if (c.shortest[static_cast<std::size_t>(p)] == kUnbounded) {
        c.shortest[static_cast<std::size_t>(p)] = c.shortest[static_cast<std::size_t>(s)] + 1;
        queue.push_back(p);
      }
    }
  }
  // Longest: states are settled sinks first (Kahn's order on the reversed moves); those never
  // settled reach a loop.
  queue.clear();
  std::vector<int> longest(n, 0);
  for (std::size_t s = 0; s < n; ++s) {
    if (out_degree[s] == 0) queue.push_back(static_cast<int>(s));
  }
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const int s = queue[i];
    c.longest[static_cast<std::size_t>(s)] = longest[static_cast<std::size_t>(s)];
    for (const int p : into[static_cast<std::size_t>(s)]) {
      longest[static_cast<std::size_t>(p)] =
          std::max(longest[static_cast<std::size_t>(p)], longest[static_cast<std::size_t>(s)] + 1);
      if (--out_degree[static_cast<std::size_t>(p)] == 0) queue.push_back(p);
    }
  }
  return c;
}

// The product of a trimmed DFA with a count of the code points read, 0..max_length. A state
// (s, count) becomes (s, free), the DFA's own, once every completion from s fits the bounds.
Dfa count_lengths(const Dfa& d, int min_length, int max_length) {
  const Completions c = completions(d);
  constexpr int kFree = -1;
  Dfa out;
  std::map<std::pair<int, int>, int> index;
  std::vector<std::pair<int, int>> states;
  // The product state of DFA state s after `count` code points (kFree: a free state's
  // successor, free too), or -1 when no completion fits max_length.
  auto intern = [&](int s, int count) {
    const std::size_t u = static_cast<std::size_t>(s);
    if (count != kFree) {
      const long shortest = static_cast<long>(count) + c.shortest[u];
      if (max_length >= 0 && shortest > max_length) return -1;
      const bool fits_max =
          max_length < 0 ||
          (c.longest[u] != kUnbounded && static_cast<long>(count) + c.longest[u] <= max_length);
      // Without a maximum this frees every state by count min_length: counts stay small.
      if (shortest >= min_length && fits_max) count = kFree;
    }
    const auto [it, inserted] = index.try_emplace({s, count}, static_cast<int>(states.size()));
    if (inserted) {
      if (static_cast<int>(states.size()) >= kMaxProductStates)
        too_large("states", kMaxProductStates);
      const bool accepting = d.accept[u] && (count == kFree || count >= min_length);
      out.add_state(accepting);
      states.emplace_back(s, count);
    }
    return it->second;
  };
  intern(0, 0);
  for (std::size_t p = 0; p < states.size(); ++p) {
    const auto [s, count] = states[p];
    std::vector<Move> moves;
    for (const Move& m : d.moves[static_cast<std::size_t>(s)]) {
      const int t = intern(m.target, count == kFree ? kFree : count + 1);
      if (t >= 0) moves.push_back({m.lo, m.hi, t});
    }
    out.moves[p] = std::move(moves);
  }
  return out;
}

// True when the code points `r` are one byte each, spelled as themselves in both encodings.
bool plain_ascii(const Ranges& r) {
  return std::all_of(r.begin(), r.end(), [](const auto& range) {
    const auto [lo, hi] = range;
    const bool special = (lo <= '"' && hi >= '"') || (lo <= '\\' && hi >= '\\') ||
                         (lo <= '/' && hi >= '/');
    return lo >= 0x20 && hi < 0x7F && !special;
  });
}

// One rule per state of `d`: its moves, each a class of code points then a (tail) call of the
// next state's rule, and the empty string where it accepts. A class is written once, as a
// rule of its own, when its spelling is more than one byte set.
int emit_dfa(Grammar& g, const Dfa& d, RegexEncoding encoding) {
  if (d.moves[0].empty() && !d.accept[0]) return g.alt({});
  const std::string base = "string" + std::to_string(g.rules.size());
  std::vector<int> rules;
  for (int s = 0; s < d.size(); ++s) rules.push_back(g.add_rule(fmt::format("{}_s{}", base, s)));
  std::map<Ranges, int> class_rules;
  auto spell = [&](const Ranges& r) {
    if (encoding == RegexEncoding::json_string) return json_string_chars(g, r, false);
    std::vector<int> alts;
    for (const auto& [lo, hi] : r) alts.push_back(utf8_range(g, lo, hi));
    return g.alt(std::move(alts));
  };
  auto chars = [&](const Ranges& r) {
    if (plain_ascii(r)) return spell(r);
    auto it = class_rules.find(r);
    if (it == class_rules.end()) {
      const int rule = g.add_rule(fmt::format("{}_c{}", base, class_rules.size()));
      g.define(rule, spell(r));
      it = class_rules.emplace(r, rule).first;
    }
    return g.ref(it->second);
  };
  for (int s = 0; s < d.size(); ++s) {
    std::map<int, Ranges> by_target;
    for (const Move& m : d.moves[static_cast<std::size_t>(s)])
      by_target[m.target].emplace_back(m.lo, m.hi);
    std::vector<int> alts;
    for (const auto& [target, ranges] : by_target)
      alts.push_back(g.seq({chars(ranges), g.ref(rules[static_cast<std::size_t>(target)])}));
    if (d.accept[static_cast<std::size_t>(s)]) alts.push_back(g.empty());
    g.define(rules[static_cast<std::size_t>(s)], g.alt(std::move(alts)));
  }
  return g.ref(rules[0]);
}

}  // namespace

int compile_string_language(Grammar& g, const std::vector<RegexTerm>& regexes, int min_length,
                            int max_length, RegexEncoding encoding) {
  if (regexes.empty()) throw Error("compile_string_language: no regex");
  if (regexes.size() == 1 && min_length <= 0 && max_length < 0)
    return compile_regex(g, regexes[0].pattern, encoding, regexes[0].search);
  Dfa d;
  for (std::size_t i = 0; i < regexes.size(); ++i) {
    const RegexTree tree = regex_tree::parse_regex(regexes[i].pattern, regexes[i].search);
    const int max_copies = max_length >= 0 && max_length < kUnbounded ? max_length + 1 : -1;
    Dfa one = Nfa(tree, max_copies).determinize();
    d = i == 0 ? std::move(one) : intersect(d, one);
  }
  d = trim(d);
  if (min_length > 0 || max_length >= 0) d = trim(count_lengths(d, min_length, max_length));
  return emit_dfa(g, d, encoding);
}

}  // namespace inferlab
