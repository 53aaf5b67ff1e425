// Exercise 10, one checked answer: regex subset -> Thompson NFA -> DFA (subset construction),
// and the token mask by a pruned walk of the token trie.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab::ex10 {

namespace {

struct Nfa {
  struct Edge {
    std::array<bool, 256> bytes{};  // empty set = epsilon edge
    bool eps = false;
    int to = 0;
  };
  std::vector<std::vector<Edge>> out;
  int add() {
    out.emplace_back();
    return static_cast<int>(out.size()) - 1;
  }
};

struct Fragment {
  int start, end;
};

class Parser {
 public:
  Parser(std::string_view p, Nfa& nfa) : p_(p), nfa_(nfa) {}
  Fragment parse() {
    const Fragment f = alternation();
    if (pos_ != p_.size()) fail("unexpected ')'");
    return f;
  }

 private:
  std::string_view p_;
  Nfa& nfa_;
  std::size_t pos_ = 0;

  [[noreturn]] void fail(const char* what) const {
    throw Error(fmt::format("regex error at position {}: {}", pos_, what));
  }
  void eps(int a, int b) { nfa_.out[static_cast<std::size_t>(a)].push_back({{}, true, b}); }

  Fragment alternation() {
    Fragment f = concatenation();
    while (pos_ < p_.size() && p_[pos_] == '|') {
      ++pos_;
      const Fragment g = concatenation();
      const int s = nfa_.add(), e = nfa_.add();
      eps(s, f.start);
      eps(s, g.start);
      eps(f.end, e);
      eps(g.end, e);
      f = {s, e};
    }
    return f;
  }

  Fragment concatenation() {
    const int s = nfa_.add();
    Fragment f{s, s};
    while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
      const Fragment g = postfix();
      eps(f.end, g.start);
      f.end = g.end;
    }
    return f;
  }

  Fragment postfix() {
    Fragment f = atom();
    while (pos_ < p_.size() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?')) {
      const char op = p_[pos_++];
      const int s = nfa_.add(), e = nfa_.add();
      eps(s, f.start);
      eps(f.end, e);
      if (op != '+') eps(s, e);            // * and ?: zero times
      if (op != '?') eps(f.end, f.start);  // * and +: again
      f = {s, e};
    }
    return f;
  }

  Fragment atom() {
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') fail("operator with nothing to repeat");
    if (c == '(') {
      ++pos_;
      const Fragment f = alternation();
      if (pos_ >= p_.size() || p_[pos_] != ')') fail("unbalanced '('");
      ++pos_;
      return f;
    }
    std::array<bool, 256> set{};
    if (c == '.') {
      set.fill(true);
      ++pos_;
    } else if (c == '[') {
      ++pos_;
      bool any = false;
      while (pos_ < p_.size() && p_[pos_] != ']') {
        const auto lo = static_cast<unsigned char>(p_[pos_]);
        auto hi = lo;
        if (pos_ + 2 < p_.size() && p_[pos_ + 1] == '-' && p_[pos_ + 2] != ']') {
          hi = static_cast<unsigned char>(p_[pos_ + 2]);
          if (hi < lo) fail("range out of order");
          pos_ += 2;
        }
        for (unsigned b = lo; b <= hi; ++b) set[b] = true;
        any = true;
        ++pos_;
      }
      if (pos_ >= p_.size()) fail("unterminated class");
      if (!any) fail("empty class");
      ++pos_;
    } else {
      set[static_cast<unsigned char>(c)] = true;
      ++pos_;
    }
    const int s = nfa_.add(), e = nfa_.add();
    nfa_.out[static_cast<std::size_t>(s)].push_back({set, false, e});
    return {s, e};
  }
};

std::set<int> closure(const Nfa& nfa, std::set<int> states) {
  std::vector<int> work(states.begin(), states.end());
  while (!work.empty()) {
    const int u = work.back();
    work.pop_back();
    for (const auto& e : nfa.out[static_cast<std::size_t>(u)]) {
      if (e.eps && states.insert(e.to).second) work.push_back(e.to);
    }
  }
  return states;
}

}  // namespace

Dfa compile_dfa(std::string_view pattern) {
  Nfa nfa;
  const Fragment f = Parser(pattern, nfa).parse();
  Dfa dfa;
  std::map<std::set<int>, int> id;
  std::vector<std::set<int>> sets{closure(nfa, {f.start})};
  id[sets[0]] = 0;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    dfa.next.emplace_back();
    dfa.next[i].fill(-1);
    dfa.accepting.push_back(sets[i].count(f.end) > 0);
    for (int b = 0; b < 256; ++b) {
      std::set<int> to;
      for (const int u : sets[i]) {
        for (const auto& e : nfa.out[static_cast<std::size_t>(u)]) {
          if (!e.eps && e.bytes[static_cast<std::size_t>(b)]) to.insert(e.to);
        }
      }
      if (to.empty()) continue;
      to = closure(nfa, to);
      auto [it, fresh] = id.try_emplace(to, static_cast<int>(sets.size()));
      if (fresh) sets.push_back(to);
      dfa.next[i][static_cast<std::size_t>(b)] = it->second;
    }
  }
  return dfa;
}

std::vector<bool> allowed_tokens(const Dfa& dfa, int state,
                                 const std::vector<std::string>& tokens) {
  // Live states: those from which an accepting state is reachable (fixpoint).
  std::vector<bool> live = dfa.accepting;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t s = 0; s < dfa.next.size(); ++s) {
      if (live[s]) continue;
      for (const int t : dfa.next[s]) {
        if (t >= 0 && live[static_cast<std::size_t>(t)]) {
          live[s] = changed = true;
          break;
        }
      }
    }
  }
  struct Node {
    std::map<unsigned char, int> child;
    std::vector<int> ids;
  };
  std::vector<Node> trie(1);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t].empty()) continue;
    int n = 0;
    for (const char c : tokens[t]) {
      const auto b = static_cast<unsigned char>(c);
      auto it = trie[static_cast<std::size_t>(n)].child.find(b);
      if (it == trie[static_cast<std::size_t>(n)].child.end()) {
        trie.emplace_back();
        it = trie[static_cast<std::size_t>(n)]
                 .child.emplace(b, static_cast<int>(trie.size()) - 1)
                 .first;
      }
      n = it->second;
    }
    trie[static_cast<std::size_t>(n)].ids.push_back(static_cast<int>(t));
  }
  std::vector<bool> allowed(tokens.size(), false);
  std::vector<std::pair<int, int>> work{{0, state}};  // (trie node, DFA state)
  while (!work.empty()) {
    const auto [n, s] = work.back();
    work.pop_back();
    for (const auto& [b, c] : trie[static_cast<std::size_t>(n)].child) {
      const int next = dfa.step(s, b);
      if (next < 0 || !live[static_cast<std::size_t>(next)]) continue;  // prune the subtree
      for (const int t : trie[static_cast<std::size_t>(c)].ids)
        allowed[static_cast<std::size_t>(t)] = true;
      work.emplace_back(c, next);
    }
  }
  return allowed;
}

}  // namespace inferlab::ex10
